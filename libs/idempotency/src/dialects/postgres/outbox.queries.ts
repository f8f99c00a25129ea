import pg from 'pg';
import type { FailedPublish, OutboxDue, OutboxRowLiterals, StoreQuery } from '../store-dialect.js';
import { PG_NO_ACTIVE_TRANSACTION, PG_UNIQUE_VIOLATION } from '../../claiming/claim.constants.js';
import { reportsError } from '../reported-error.js';

/**
 * Writes one message and wakes the relays listening on the table's channel at COMMIT, in one
 * statement that answers a count (a caller's statement function may be Prisma's, which cannot read `void`).
 * A message with an ordering key first takes a transaction-level advisory lock on the table and
 * its key (the two-key form, apart from the one-key locks of most applications), before its `seq`
 * is drawn: the writers of one key take turns from their INSERT to their COMMIT or ROLLBACK, so its
 * messages are numbered in the order their transactions commit, and the relay never finds a later
 * one of a key committed before an earlier one.
 * @internal
 */
export function insertOutboxStatements(table: string, row: OutboxRowLiterals): string[] {
  const insert = `INSERT INTO "${table}" (id, destination, address, pattern, headers, payload, ordering_key, next_attempt_at) `;
  const values = `VALUES (${row.id}, ${row.destination}, ${row.address}, ${row.pattern}, ${row.headers}::json, ${row.payload}, ${row.orderingKey}, ${row.availableAt})`;
  const written =
    row.orderingKey === 'NULL'
      ? `written AS (${insert}${values} RETURNING 1)`
      : `locked AS (SELECT pg_advisory_xact_lock(hashtext('${table}'), hashtext(${row.orderingKey}))), ` +
        `written AS (${insert}SELECT message.* FROM locked, (${values}) AS message RETURNING 1)`;
  return [`WITH ${written} SELECT count(*)::int AS written FROM (SELECT pg_notify('${table}', '') FROM written) AS woken`];
}

/** When a message is due: its transaction's start (`now()`), plus a delay, or a moment. @internal */
export function dueSql(due: OutboxDue): string {
  if (due === null) {
    return 'now()';
  }
  return 'at' in due ? `${pg.escapeLiteral(due.at.toISOString())}::timestamptz` : `now() + ${due.delayMs} * interval '1 millisecond'`;
}

/**
 * The check that a caller's statement function runs in a transaction block: PostgreSQL refuses
 * LOCK TABLE outside one (25P01), and inside one this is the lock the INSERT takes anyway.
 * @internal
 */
export function inTransactionCheckSql(table: string): string {
  return `LOCK TABLE "${table}" IN ROW EXCLUSIVE MODE`;
}

/** @internal */
export function refusedOutsideTransaction(error: unknown): boolean {
  return reportsError(error, PG_NO_ACTIVE_TRANSACTION, 'can only be used in transaction blocks');
}

/** @internal */
export function idTaken(error: unknown, table: string): boolean {
  return reportsError(error, PG_UNIQUE_VIOLATION, `${table}_id_key`);
}

/** node-postgres parses a `json` column. @internal */
export function headersOf(column: unknown): Record<string, string> {
  return column as Record<string, string>;
}

/**
 * The next batch: due messages in the order they were written, locked for this relay's
 * transaction and skipped by the others'; of one ordering key only the oldest message not yet
 * dispatched (with `deadLetterHoldsKey`, a dead letter counts as not yet dispatched: it holds its
 * key's later messages back until it is requeued or discarded; without, it is passed over).
 * @internal
 */
export function takeBatchSql(table: string, batchSize: number, deadLetterHoldsKey: boolean): string {
  const earlier = `e.ordering_key = m.ordering_key AND e.seq < m.seq AND e.dispatched_at IS NULL${deadLetterHoldsKey ? '' : ' AND e.dead_lettered_at IS NULL'}`;
  return (
    `SELECT seq, id, destination, address, pattern, headers, payload, ordering_key, attempts, last_error FROM "${table}" m ` +
    `WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL AND next_attempt_at <= now() ` +
    `AND (ordering_key IS NULL OR NOT EXISTS (SELECT 1 FROM "${table}" e WHERE ${earlier})) ` +
    `ORDER BY seq LIMIT ${batchSize} FOR UPDATE SKIP LOCKED`
  );
}

/** @internal */
export function markDispatchedSql(table: string, seqs: readonly string[]): string {
  // Not now(), the batch transaction's start: the statement arrives after the broker confirmed every message of it.
  return `UPDATE "${table}" SET dispatched_at = statement_timestamp() WHERE seq IN (${seqs.join(', ')})`;
}


/** @internal */
export function markFailedSql(table: string, failures: readonly FailedPublish[]): string {
  const values = failures.map(({ seq, error, delayMs, dead }) => `(${seq}::bigint, ${error}, ${delayMs}::bigint, ${dead})`).join(', ');
  return (
    `UPDATE "${table}" m SET attempts = m.attempts + 1, last_error = f.error, ` +
    `next_attempt_at = now() + f.delay_ms * interval '1 millisecond', dead_lettered_at = CASE WHEN f.dead THEN now() END ` +
    `FROM (VALUES ${values}) AS f(seq, error, delay_ms, dead) WHERE m.seq = f.seq`
  );
}

/** Dispatched messages older than the retention, deleted in one batch beside the relays. @internal */
export async function purgeDispatched(query: StoreQuery, table: string, retentionMs: number, batchSize: number): Promise<number> {
  const {
    rows: [{ rows }],
  } = await query<{ rows: number }>(
    `WITH batch AS (SELECT seq FROM "${table}" WHERE dispatched_at < now() - ${retentionMs} * interval '1 millisecond' ` +
    `ORDER BY dispatched_at LIMIT ${batchSize} FOR UPDATE SKIP LOCKED), ` +
    `purged AS (DELETE FROM "${table}" WHERE seq IN (SELECT seq FROM batch) RETURNING 1) ` +
    `SELECT count(*)::int AS rows FROM purged`,
  );
  return rows;
}

const DEAD_LETTER_COLUMNS = 'id, destination, address, pattern, ordering_key, headers, payload, attempts, last_error, created_at, dead_lettered_at';

/**
 * Dead letters, oldest first; `$1` the limit, then filters, each ignored when null: `$2` the
 * ordering key, `$3` the destination, `$4` the address, `$5` parked before, `$6` after the dead letter of that id.
 * @internal
 */
export function outboxDeadLettersSql(table: string): string {
  return (
    `SELECT ${DEAD_LETTER_COLUMNS} FROM "${table}" WHERE dead_lettered_at IS NOT NULL ` +
    `AND ($2::text IS NULL OR ordering_key = $2::text) AND ($3::text IS NULL OR destination = $3::text) AND ($4::text IS NULL OR address = $4::text) ` +
    `AND ($5::timestamptz IS NULL OR dead_lettered_at < $5::timestamptz) ` +
    `AND ($6::text IS NULL OR seq > (SELECT seq FROM "${table}" WHERE id = $6::text AND dead_lettered_at IS NOT NULL)) ` +
    `ORDER BY seq LIMIT $1`
  );
}

/** The dead letter of id `$1`. @internal */
export function outboxDeadLetterSql(table: string): string {
  return `SELECT ${DEAD_LETTER_COLUMNS} FROM "${table}" WHERE id = $1 AND dead_lettered_at IS NOT NULL`;
}

/** Makes the dead letters of `ids` due again, their attempts from zero, and wakes the relays at COMMIT. @internal */
export async function requeue(query: StoreQuery, table: string, ids: readonly string[]): Promise<string[]> {
  const { rows } = await query<{ id: string }>(
    `WITH requeued AS (UPDATE "${table}" SET dead_lettered_at = NULL, attempts = 0, next_attempt_at = now(), last_error = NULL ` +
    `WHERE id = ANY ($1::text[]) AND dead_lettered_at IS NOT NULL RETURNING id), ` +
    `woken AS (SELECT pg_notify('${table}', '') FROM (SELECT 1 FROM requeued LIMIT 1) AS any_requeued) ` +
    `SELECT id FROM requeued, (SELECT count(*) FROM woken) AS notified`,
    [ids],
  );
  return rows.map((row) => row.id);
}

/** Deletes the dead letters of `ids`. @internal */
export async function discard(query: StoreQuery, table: string, ids: readonly string[]): Promise<string[]> {
  const { rows } = await query<{ id: string }>(`DELETE FROM "${table}" WHERE id = ANY ($1::text[]) AND dead_lettered_at IS NOT NULL RETURNING id`, [ids]);
  return rows.map((row) => row.id);
}

/** The columns of the table `$1` (in the search path), a row each; none when there is no such table. @internal */
export const outboxColumnsSql = 'SELECT attname::text AS name FROM pg_attribute WHERE attrelid = to_regclass(quote_ident($1)) AND attnum > 0 AND NOT attisdropped';
