import type { ClaimOpening, ClaimSql, ClaimValues, ResponseValues } from '../store-dialect.js';
import { PG_LOCK_NOT_AVAILABLE, postgresErrorCode } from './postgres-errors.js';

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
 * available). Its one row says whether this delivery won (`claimed`). With the request's
 * `formerConsumer` (the handler's name before 0.3.0), a row stored under that name counts as taken too.
 */
export function claimStatement({ table, literal }: ClaimSql, request: ClaimValues): string {
  const { formerConsumer } = request;
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

/** BEGIN with the claim and `after`, in one round trip; whether the claim's row says this delivery won. */
export async function beginClaim(connection: ClaimOpening, sql: ClaimSql, request: ClaimValues, after: string[]): Promise<boolean> {
  const [claim] = await connection.begin(request.isolationLevel, [claimStatement(sql, request), ...after]);
  return (claim.rows[0] as { claimed: boolean }).claimed;
}

/** The claim's INSERT waited for a twin's row past the function's `lock_timeout`: 55P03, lock not available. */
export function heldByTwin(error: unknown): boolean {
  return postgresErrorCode(error) === PG_LOCK_NOT_AVAILABLE;
}

/** Reads the committed twin's fingerprint and recorded response (under the consumer's own name first, then its former one). */
export function twinStatement({ table, literal }: ClaimSql, request: ClaimValues): string {
  const { formerConsumer } = request;
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
export function recordStatements({ table, literal, readsVoid }: ClaimSql, request: ClaimValues, response: ResponseValues): string[] {
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

/**
 * How long the message's row under the consumer's own name is kept yet, in milliseconds from the
 * transaction's start, both by the database's clock (so no other clock is compared with it). Sent
 * beside the twin's read, in its round trip.
 */
export function recordExpiryStatement({ table, literal }: ClaimSql, request: ClaimValues): string {
  return (
    `SELECT (extract(epoch FROM expires_at - now()) * 1000)::float8 AS expires_in_ms FROM "${table}" ` +
    `WHERE consumer = ${literal(request.consumer)} AND message_id = ${literal(request.key)}`
  );
}

