import type { ClaimRequest, RecordedResponse } from './claim.js';
import type { StatementResult } from '../data-layers/data-layer.js';

/**
 * The SQL of the claim. `table` is a validated plain identifier; every value goes through
 * `literal` (the connection's `escapeLiteral`), since these statements travel as one
 * multi-statement simple query with BEGIN or COMMIT, which takes no parameters.
 */
export interface ClaimSql {
  readonly table: string;
  readonly literal: (value: string) => string;
  /** The connection reads a `void` column (node-postgres does; Prisma's raw queries, which `run()` may be given, do not). */
  readonly readsVoid: boolean;
}

/** The function of `table` that claims a message (created by `CreateProcessedMessagesFunctions1796256000000`). */
export function claimFunction(table: string): string {
  return `${table}_claim`;
}

/** The function of `table` that records a response on a claim (created by the same migration). */
export function recordFunction(table: string): string {
  return `${table}_record`;
}

/**
 * The claim: inserts the message's row, or finds it taken. A twin's uncommitted row makes the
 * INSERT wait, for at most the function's `lock_timeout`, then fail with 55P03 (lock not
 * available). Its one row says whether this delivery won (`claimed`). With `formerConsumer` (the
 * handler's name before 0.3.0), a row stored under that name counts as taken too.
 */
export function claimStatement({ table, literal }: ClaimSql, request: ClaimRequest, formerConsumer?: string): string {
  const fingerprint = request.fingerprint === null ? 'NULL' : literal(request.fingerprint);
  const claim =
    `"${claimFunction(table)}"(${literal(request.consumer)}, ${literal(request.key)}, ${literal(request.sender)}, ` +
    `${fingerprint}, ${request.retentionMs})`;
  if (formerConsumer === undefined) {
    return `SELECT ${claim} AS claimed`;
  }
  return (
    `SELECT CASE WHEN EXISTS (SELECT FROM "${table}" WHERE consumer = ${literal(formerConsumer)} AND message_id = ${literal(request.key)}) ` +
    `THEN false ELSE ${claim} END AS claimed`
  );
}

/** Whether the result of `claimStatement` says this delivery won the claim. */
export function claimWon(result: StatementResult): boolean {
  return (result.rows[0] as { claimed: boolean }).claimed;
}

/** Reads the committed twin's fingerprint and recorded response (under the consumer's own name first, then its former one). */
export function twinStatement({ table, literal }: ClaimSql, request: ClaimRequest, formerConsumer?: string): string {
  const columns = `SELECT fingerprint, response_status, response_headers, response_body, lease_token IS NOT NULL AS leased FROM "${table}"`;
  if (formerConsumer === undefined) {
    return `${columns} WHERE consumer = ${literal(request.consumer)} AND message_id = ${literal(request.key)}`;
  }
  return (
    `${columns} WHERE consumer IN (${literal(request.consumer)}, ${literal(formerConsumer)}) AND message_id = ${literal(request.key)} ` +
    `ORDER BY consumer = ${literal(request.consumer)} DESC LIMIT 1`
  );
}

/**
 * The statement that records `response` on the claim row; none when the response is empty (an
 * event handler's), since the claim row already holds NULLs and rewriting it would cost the
 * database a second row version for nothing.
 */
export function recordStatements({ table, literal, readsVoid }: ClaimSql, request: ClaimRequest, response: RecordedResponse): string[] {
  const { status, headers, body } = response;
  if (status === null && headers === null && body === null) {
    return [];
  }
  const headersSql = headers === null ? 'NULL' : `${literal(JSON.stringify(headers))}::json`;
  const bodySql = body === null ? 'NULL' : `'\\x${body.toString('hex')}'::bytea`;
  return [
    // Selecting the function's void result costs the database least; FROM it, selecting nothing, gives no void column.
    `SELECT ${readsVoid ? '' : 'FROM '}"${recordFunction(table)}"(${literal(request.consumer)}, ${literal(request.key)}, ${status ?? 'NULL'}, ${headersSql}, ${bodySql})`,
  ];
}

/** A row of `twinStatement`. */
export interface StoredClaim {
  fingerprint: string | null;
  response_status: number | null;
  response_headers: Record<string, string | string[]> | null;
  response_body: Buffer | null;
  /** Held by a delivery in lease mode (a handler that changed its mode), not completed. */
  leased: boolean;
}

/**
 * How long the message's row under the consumer's own name is kept yet, in milliseconds from the
 * transaction's start, both by the database's clock (so no other clock is compared with it). Sent
 * beside the twin's read, in its round trip.
 */
export function recordExpiryStatement({ table, literal }: ClaimSql, request: ClaimRequest): string {
  return (
    `SELECT (extract(epoch FROM expires_at - now()) * 1000)::float8 AS expires_in_ms FROM "${table}" ` +
    `WHERE consumer = ${literal(request.consumer)} AND message_id = ${literal(request.key)}`
  );
}

/** A row of `recordExpiryStatement`. */
export interface RecordExpiry {
  expires_in_ms: number;
}
