/** The SQL of the start-up look at the consumer names stored. `table` is a validated plain identifier. */

/**
 * Up to `limit` distinct consumer names of `table`, in order, by a skip scan of the primary key:
 * one index probe per name, never a scan of the rows.
 */
export function storedConsumersSql(table: string, limit: number): string {
  return `WITH RECURSIVE names(consumer) AS (
           (SELECT consumer FROM "${table}" ORDER BY consumer LIMIT 1)
           UNION ALL
           SELECT (SELECT t.consumer FROM "${table}" t WHERE t.consumer > names.consumer ORDER BY t.consumer LIMIT 1)
           FROM names WHERE names.consumer IS NOT NULL
         )
         SELECT consumer FROM names WHERE consumer IS NOT NULL LIMIT ${limit}`;
}

/**
 * Moves up to `limit` ids stored under consumer `$1` to consumer `$2`, in one statement that is
 * safe beside claims and beside other instances doing the same: rows locked by another
 * transaction are skipped (a later batch takes them), a row under a live lease stays (its holder
 * completes it by its name), and where `$2` already holds the id, its row wins and the other is
 * dropped. Answers how many rows left `$1`.
 */
export function moveConsumerSql(table: string, limit: number): string {
  const columns = 'sender, fingerprint, response_status, response_headers, response_body, processed_at, expires_at, lease_token, lease_expires_at';
  return `WITH moved AS (
           DELETE FROM "${table}" WHERE consumer = $1 AND message_id IN (
             SELECT message_id FROM "${table}" WHERE consumer = $1 AND (lease_token IS NULL OR lease_expires_at < now())
             LIMIT ${limit} FOR UPDATE SKIP LOCKED)
           RETURNING message_id, ${columns}
         ), kept AS (
           INSERT INTO "${table}" (consumer, message_id, ${columns})
           SELECT $2, message_id, ${columns} FROM moved
           ON CONFLICT ON CONSTRAINT "${table}_pkey" DO NOTHING
         )
         SELECT count(*)::int AS moved FROM moved`;
}

/** Whether consumer `$1` still has a row (a live lease the move left). */
export function consumerHasRowsSql(table: string): string {
  return `SELECT EXISTS (SELECT FROM "${table}" WHERE consumer = $1) AS held`;
}
