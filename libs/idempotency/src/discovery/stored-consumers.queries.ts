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
