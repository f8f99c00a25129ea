/** The SQL of the purge. `table` is a validated plain identifier. */

/**
 * Deletes up to `batchSize` expired rows, oldest first, chosen through the index on `expires_at`.
 * The rows are locked by the selection (a row another transaction holds is skipped, not waited
 * for), deleted by their physical address, and checked again against the clock: a row that has
 * not expired is never deleted.
 */
export function purgeBatchSql(table: string, batchSize: number): string {
  return (
    `WITH batch AS (SELECT ctid FROM "${table}" WHERE expires_at < now() ` +
    `ORDER BY expires_at LIMIT ${batchSize} FOR UPDATE SKIP LOCKED) ` +
    `DELETE FROM "${table}" WHERE ctid = ANY (ARRAY(SELECT ctid FROM batch)) AND expires_at < now()`
  );
}

/**
 * The cluster-wide purge lock of `table`, a session-level advisory lock in the two-key space (so
 * it cannot collide with an application's one-key advisory locks): `$1` is the table's name.
 */
export const TRY_LOCK_SQL = `SELECT pg_try_advisory_lock(hashtext('idempotency.purge'), hashtext($1)) AS locked`;
export const UNLOCK_SQL = `SELECT pg_advisory_unlock(hashtext('idempotency.purge'), hashtext($1))`;
