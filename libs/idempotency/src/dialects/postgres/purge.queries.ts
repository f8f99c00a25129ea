import type { PurgeBatchResult, StoreQuery } from '../store-dialect.js';

/** The SQL of the purge. `table` is a validated plain identifier. */


/**
 * One purge batch as one statement (its own implicit transaction, one round trip), answering a
 * {@link PurgeBatchResult}. It first takes the purge lock of `table`: a transaction-level advisory
 * lock in the two-key space (so it cannot collide with an application's one-key advisory locks),
 * released when the statement's transaction ends, so no session state outlives the statement and
 * the purge works behind a pooler such as PgBouncer in transaction mode. The lock gates the scan
 * (a one-time filter evaluated before the first row is read): a batch that finds it held by another
 * instance's batch selects and deletes nothing.
 *
 * Holding it, the batch deletes up to `batchSize` expired rows, oldest first, chosen through the
 * index on `expires_at`. The rows are locked by the selection (a row another transaction holds is
 * skipped, not waited for), deleted by their physical address, and checked again against the
 * clock: a row that has not expired is never deleted.
 */
function purgeBatchSql(table: string, batchSize: number): string {
  return (
    `WITH purge_lock AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(hashtext('idempotency.purge'), hashtext('${table}')) AS held), ` +
    `batch AS (SELECT ctid FROM "${table}" WHERE (SELECT held FROM purge_lock) AND expires_at < now() ` +
    `ORDER BY expires_at LIMIT ${batchSize} FOR UPDATE SKIP LOCKED), ` +
    `purged AS (DELETE FROM "${table}" WHERE ctid = ANY (ARRAY(SELECT ctid FROM batch)) AND expires_at < now() RETURNING 1) ` +
    `SELECT (SELECT held FROM purge_lock) AS locked, (SELECT count(*) FROM purged)::int AS rows`
  );
}

/** One batch of the purge, as {@link purgeBatchSql} answers it. */
export async function purgeBatch(query: StoreQuery, table: string, batchSize: number): Promise<PurgeBatchResult> {
  const {
    rows: [batch],
  } = await query<PurgeBatchResult>(purgeBatchSql(table, batchSize));
  return batch;
}
