import type { FailedPublish, OutboxDue, OutboxRowLiterals, StoreQuery } from '../store-dialect.js';
import { reportsError } from '../reported-error.js';
import { mariaDbLiteral } from './mariadb-literal.js';

/**
 * The outbox on MariaDB. `table` is a validated plain identifier; the ordering keys' table is
 * `<table>_keys`. MariaDB has no NOTIFY: a relay is woken by its own process's commits and polls
 * for the others'. The relay's batch runs at READ COMMITTED (no gap locks that would hold up the
 * writers), and `FOR UPDATE SKIP LOCKED` shares the table between relays (MariaDB 10.6 or newer).
 */

/** When a message is due, by the server's clock: when its INSERT runs (`NOW(6)`, with the COMMIT of a claim), plus a delay, or a moment. */
export function dueSql(due: OutboxDue): string {
  if (due === null) {
    return 'NOW(6)';
  }
  if ('at' in due) {
    return `CONVERT_TZ(${mariaDbLiteral(due.at.toISOString().replace('T', ' ').replace('Z', ''))}, '+00:00', @@session.time_zone)`;
  }
  return `NOW(6) + INTERVAL ${due.delayMs * 1000} MICROSECOND`;
}

/**
 * Writes one message. A message with an ordering key first locks its key's row in `<table>_keys`
 * (an INSERT, or the row already there, locked as an update locks it), before its `seq` is drawn:
 * the writers of one key take turns from their INSERT to their COMMIT or ROLLBACK, so its messages
 * are numbered in the order their transactions commit, and the relay never finds a later one of a
 * key committed before an earlier one. The row stays: one per ordering key ever used.
 */
export function insertOutboxStatements(table: string, row: OutboxRowLiterals): string[] {
  const insert =
    `INSERT INTO \`${table}\` (id, destination, address, pattern, headers, payload, ordering_key, next_attempt_at) ` +
    `VALUES (${row.id}, ${row.destination}, ${row.address}, ${row.pattern}, ${row.headers}, ${row.payload}, ${row.orderingKey}, ${row.availableAt})`;
  if (row.orderingKey === 'NULL') {
    return [insert];
  }
  return [`INSERT INTO \`${table}_keys\` (ordering_key) VALUES (${row.orderingKey}) ON DUPLICATE KEY UPDATE ordering_key = ordering_key`, insert];
}

/** A statement that fails outside a transaction (1242: its subquery answers two rows), and answers 1 inside one. */
export function inTransactionCheckSql(): string {
  return 'SELECT IF(@@in_transaction = 1, 1, (SELECT 1 UNION ALL SELECT 2)) AS in_transaction';
}

export function refusedOutsideTransaction(error: unknown): boolean {
  return reportsError(error, 'ER_SUBQUERY_NO_1_ROW', 'Subquery returns more than 1 row');
}

export function idTaken(error: unknown, table: string): boolean {
  return reportsError(error, 'ER_DUP_ENTRY', `for key '${table}_id_key'`);
}

/**
 * The next batch: due messages in the order they were written, locked for this relay's
 * transaction and skipped by the others'; of one ordering key only the oldest message not yet
 * dispatched (with `deadLetterHoldsKey`, a dead letter counts as not yet dispatched).
 */
export function takeBatchSql(table: string, batchSize: number, deadLetterHoldsKey: boolean): string {
  const earlier = `e.ordering_key = m.ordering_key AND e.seq < m.seq AND e.dispatched_at IS NULL${deadLetterHoldsKey ? '' : ' AND e.dead_lettered_at IS NULL'}`;
  return (
    `SELECT CAST(seq AS CHAR) AS seq, id, destination, address, pattern, headers, payload, ordering_key, attempts, last_error FROM \`${table}\` m ` +
    `WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL AND next_attempt_at <= NOW(6) ` +
    `AND (ordering_key IS NULL OR NOT EXISTS (SELECT 1 FROM \`${table}\` e WHERE ${earlier})) ` +
    `ORDER BY m.seq LIMIT ${batchSize} FOR UPDATE SKIP LOCKED`
  );
}

/** The headers column is JSON text (MariaDB's JSON is a text). */
export function headersOf(column: unknown): Record<string, string> {
  return typeof column === 'string' ? (JSON.parse(column) as Record<string, string>) : (column as Record<string, string>);
}

export function markDispatchedSql(table: string, seqs: readonly string[]): string {
  return `UPDATE \`${table}\` SET dispatched_at = NOW(6) WHERE seq IN (${seqs.join(', ')})`;
}

/** One UPDATE for every failure of the batch, each message's values picked by its `seq`. */
export function markFailedSql(table: string, failures: readonly FailedPublish[]): string {
  const each = (value: (failure: FailedPublish) => string) => `CASE seq ${failures.map((failure) => `WHEN ${failure.seq} THEN ${value(failure)}`).join(' ')} END`;
  return (
    `UPDATE \`${table}\` SET attempts = attempts + 1, last_error = ${each((failure) => failure.error)}, ` +
    `next_attempt_at = NOW(6) + INTERVAL ${each((failure) => String(failure.delayMs * 1000))} MICROSECOND, ` +
    `dead_lettered_at = ${each((failure) => (failure.dead ? 'NOW(6)' : 'NULL'))} ` +
    `WHERE seq IN (${failures.map((failure) => failure.seq).join(', ')})`
  );
}

/** Dispatched messages older than the retention, one batch through the index of `dispatched_at`, waiting at most 1 s for a row. */
export async function purgeDispatched(query: StoreQuery, table: string, retentionMs: number, batchSize: number): Promise<number> {
  const { rowCount } = await query(
    `SET STATEMENT innodb_lock_wait_timeout = 1 FOR DELETE FROM \`${table}\` WHERE dispatched_at < NOW(6) - INTERVAL ${retentionMs * 1000} MICROSECOND ` +
      `ORDER BY dispatched_at LIMIT ${batchSize}`,
  );
  return rowCount;
}

const DEAD_LETTER_COLUMNS = 'id, destination, address, pattern, ordering_key, headers, payload, attempts, last_error, created_at, dead_lettered_at';

/** Dead letters, oldest first; `$1` the limit, then filters, each ignored when null (as `outboxDeadLettersSql` of PostgreSQL). */
export function outboxDeadLettersSql(table: string): string {
  return (
    `SELECT ${DEAD_LETTER_COLUMNS} FROM \`${table}\` WHERE dead_lettered_at IS NOT NULL ` +
    `AND ($2 IS NULL OR ordering_key = $2) AND ($3 IS NULL OR destination = $3) AND ($4 IS NULL OR address = $4) ` +
    `AND ($5 IS NULL OR dead_lettered_at < $5) ` +
    `AND ($6 IS NULL OR seq > (SELECT seq FROM \`${table}\` WHERE id = $6 AND dead_lettered_at IS NOT NULL)) ` +
    `ORDER BY seq LIMIT $1`
  );
}

export function outboxDeadLetterSql(table: string): string {
  return `SELECT ${DEAD_LETTER_COLUMNS} FROM \`${table}\` WHERE id = $1 AND dead_lettered_at IS NOT NULL`;
}

/**
 * Makes the dead letters of `ids` due again, their attempts from zero. MariaDB's UPDATE answers no
 * rows: the dead letters among `ids` are read first, then those still parked are requeued. No relay
 * is woken by the database (`OutboxAdmin` wakes its process's).
 */
export async function requeue(query: StoreQuery, table: string, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) {
    return [];
  }
  const { rows } = await query<{ id: string }>(`SELECT id FROM \`${table}\` WHERE id IN ($1) AND dead_lettered_at IS NOT NULL`, [ids]);
  if (rows.length > 0) {
    await query(
      `UPDATE \`${table}\` SET dead_lettered_at = NULL, attempts = 0, next_attempt_at = NOW(6), last_error = NULL WHERE id IN ($1) AND dead_lettered_at IS NOT NULL`,
      [rows.map((row) => row.id)],
    );
  }
  return rows.map((row) => row.id);
}

export async function discard(query: StoreQuery, table: string, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) {
    return [];
  }
  const { rows } = await query<{ id: string }>(`DELETE FROM \`${table}\` WHERE id IN ($1) AND dead_lettered_at IS NOT NULL RETURNING id`, [ids]);
  return rows.map((row) => row.id);
}

/** The outbox table's columns, a row each; none when it or its ordering keys' table is missing. */
export const outboxColumnsSql =
  'SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = $1 ' +
  "AND EXISTS (SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = CONCAT($1, '_keys'))";

/** The age of the oldest message not dispatched (a delayed one counts from when it is due), through the pending index, and the dead letters. */
export function outboxStateSql(table: string): string {
  return (
    `SELECT (SELECT CAST(GREATEST(0, TIMESTAMPDIFF(MICROSECOND, IF(attempts = 0, GREATEST(created_at, next_attempt_at), created_at), NOW(6)) DIV 1000) AS DOUBLE) ` +
    `FROM \`${table}\` WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL ORDER BY seq LIMIT 1) AS lag_ms, ` +
    `(SELECT COUNT(*) FROM \`${table}\` WHERE dead_lettered_at IS NOT NULL) AS dead_letters`
  );
}

export function toOutboxSample(row: { lag_ms: number | null; dead_letters: number | string }): { readonly lagMs: number; readonly deadLetters: number } {
  return { lagMs: row.lag_ms ?? 0, deadLetters: Number(row.dead_letters) };
}
