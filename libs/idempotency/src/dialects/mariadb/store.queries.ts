import type { PurgeBatchResult, StoreFigures, StoreQuery } from '../store-dialect.js';

/** The SQL of the store's background services on MariaDB. `table` is a validated plain identifier. */

/**
 * The table's figures, never a `count(*)`: InnoDB's row estimate and sizes from
 * `information_schema.TABLES`, the oldest expired row and the first unexpired one through the
 * expiry index.
 */
export function storeStatisticsSql(table: string): string {
  return (
    `SELECT CAST(t.TABLE_ROWS AS DOUBLE) AS estimated_rows, CAST(t.DATA_LENGTH + t.INDEX_LENGTH AS DOUBLE) AS total_bytes, ` +
    `(SELECT CAST(TIMESTAMPDIFF(MICROSECOND, MIN(expires_at), NOW(6)) / 1000 AS DOUBLE) FROM \`${table}\` WHERE expires_at < NOW(6)) AS lag_ms, ` +
    `(SELECT CAST(TIMESTAMPDIFF(MICROSECOND, processed_at, NOW(6)) / 1000 AS DOUBLE) FROM \`${table}\` WHERE expires_at >= NOW(6) ORDER BY expires_at LIMIT 1) AS oldest_age_ms ` +
    `FROM information_schema.TABLES t WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_NAME = '${table}'`
  );
}

/** A row of `storeStatisticsSql()`. */
interface TableStatistics {
  estimated_rows: number | null;
  total_bytes: number;
  lag_ms: number | null;
  oldest_age_ms: number | null;
}

export function toStoreFigures(row: TableStatistics): StoreFigures {
  return { estimatedRows: row.estimated_rows, totalBytes: row.total_bytes, lagMs: row.lag_ms, oldestAgeMs: row.oldest_age_ms };
}

/**
 * One batch: up to `batchSize` expired rows, oldest first, chosen through the index on `expires_at`
 * and locked by the selection (a row another transaction holds, a live claim's or another
 * instance's batch's, is skipped, not waited for: `SKIP LOCKED`), then deleted by their primary
 * key. The layer runs it at READ COMMITTED, which takes no gap locks that would hold up new claims.
 * There is no lock between instances: two purges at once delete apart, each skipping the other's
 * rows (without `SKIP LOCKED` they met on the same oldest rows and deadlocked, 1213).
 */
export async function purgeBatch(query: StoreQuery, table: string, batchSize: number): Promise<PurgeBatchResult> {
  const { rowCount } = await query(
    `SET STATEMENT innodb_lock_wait_timeout = 1 FOR DELETE expired FROM \`${table}\` AS expired JOIN ` +
      `(SELECT consumer, message_id FROM \`${table}\` WHERE expires_at < NOW(6) ORDER BY expires_at LIMIT ${batchSize} FOR UPDATE SKIP LOCKED) AS batch ` +
      'USING (consumer, message_id) WHERE expired.expires_at < NOW(6)',
  );
  return { locked: true, rows: rowCount };
}

/**
 * The table and its columns from `information_schema`, in the shape PostgreSQL's catalogue query
 * answers: a binary column's type reads `bytea`, the name the check compares. MariaDB has no
 * claim functions: both read as found. Its parameter is the table's name.
 */
export const catalogueStatement =
  `SELECT EXISTS (SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = $1) AS tableFound, ` +
  `COALESCE((SELECT JSON_ARRAYAGG(JSON_OBJECT('name', COLUMN_NAME, 'type', IF(DATA_TYPE LIKE '%blob' OR DATA_TYPE = 'varbinary', 'bytea', COLUMN_TYPE), ` +
  `'notNull', IS_NULLABLE = 'NO' IS TRUE)) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = $1), '[]') AS columns, ` +
  `TRUE AS claimFound, TRUE AS recordFound`;

export function catalogueParameters(table: string): string[] {
  return [table];
}

/** Up to `limit` distinct consumer names, in order, from the primary key. */
export function storedConsumersSql(table: string, limit: number): string {
  return `SELECT DISTINCT consumer FROM \`${table}\` ORDER BY consumer LIMIT ${limit}`;
}

/**
 * Ids move between consumer names only for handlers named before 0.3.0, whose rows a store on
 * MariaDB never held: nothing to move.
 */
export function moveConsumerSql(): string {
  return 'SELECT 0 AS moved';
}

/** Whether consumer `$1` still has a row. */
export function consumerHasRowsSql(table: string): string {
  return `SELECT EXISTS (SELECT 1 FROM \`${table}\` WHERE consumer = $1) AS held`;
}

/** The columns an operator reads of the rows; with `includeBody`, the recorded headers and body too. */
function adminRowsSql(table: string, includeBody: boolean): string {
  return (
    `SELECT consumer, message_id, sender, processed_at, expires_at, lease_token, lease_expires_at, ` +
    `lease_expires_at < NOW(6) AS lease_expired, response_status, OCTET_LENGTH(response_body) AS response_bytes` +
    `${includeBody ? ', response_headers, response_body' : ''} FROM \`${table}\``
  );
}

/** One message's row: `$1` consumer, `$2` message id. */
export function adminLookupSql(table: string, includeBody: boolean): string {
  return `${adminRowsSql(table, includeBody)} WHERE consumer = $1 AND message_id = $2`;
}

/** A consumer's newest rows, before `$2` when it is not null, newest first. */
export function adminListSql(table: string, limit: number): string {
  return `${adminRowsSql(table, false)} WHERE consumer = $1 AND ($2 IS NULL OR processed_at < $2) ORDER BY processed_at DESC LIMIT ${limit}`;
}

/** Deletes a message's row unless a live lease holds it, or (`$3` true) in any case. */
export function adminForgetSql(table: string): string {
  return `DELETE FROM \`${table}\` WHERE consumer = $1 AND message_id = $2 AND (lease_token IS NULL OR lease_expires_at < NOW(6) OR $3)`;
}

/** Deletes a message's row while a lease holds it: any lease, or (`$3` not null) the lease of that token. */
export function adminReleaseSql(table: string): string {
  return `DELETE FROM \`${table}\` WHERE consumer = $1 AND message_id = $2 AND lease_token IS NOT NULL AND ($3 IS NULL OR lease_token = $3)`;
}
