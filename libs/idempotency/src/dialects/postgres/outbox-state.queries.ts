/**
 * The outbox's state, shared by the health indicator and the outbox's gauges: the age of the
 * oldest message not dispatched (a delayed one counts from when it is due), through the index of
 * the pending messages, and the dead letters. Read its row with `toOutboxSample()`.
 * @internal
 */
export function outboxStateSql(table: string): string {
  // A delayed message (never tried, due later) is late only from its due time.
  return (
    `SELECT (SELECT greatest(0, extract(epoch FROM now() - CASE WHEN attempts = 0 THEN greatest(created_at, next_attempt_at) ELSE created_at END) * 1000)::bigint ` +
    `FROM "${table}" ` +
    `WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL ORDER BY seq LIMIT 1) AS lag_ms, ` +
    `(SELECT count(*) FROM "${table}" WHERE dead_lettered_at IS NOT NULL)::int AS dead_letters`
  );
}

/** The row of `outboxStateSql()` as figures. @internal */
export function toOutboxSample(row: { lag_ms: string | null; dead_letters: number }): { readonly lagMs: number; readonly deadLetters: number } {
  return { lagMs: Number(row.lag_ms ?? 0), deadLetters: row.dead_letters };
}
