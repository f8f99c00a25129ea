import type { StoreFigures } from '../store-dialect.js';

/** What one cheap read of the store says: the catalog's statistics and two probes of the expiry index. */
export interface StoreStatistics {
  reltuples: number;
  relpages: number;
  pages: number;
  total_bytes: number;
  /** How long ago the oldest expired, not yet purged id expired; null when none has. */
  lag_ms: number | null;
  /** Age of the unexpired row that expires first (the oldest one when every handler keeps ids as long); null when none. */
  oldest_age_ms: number | null;
}

/**
 * One round trip, never a `count(*)`: the catalog's statistics, the oldest expired row and the
 * first unexpired one, both through the expiry index. Shared by the
 * health indicator and the store's gauges.
 */
export function storeStatisticsSql(tableName: string): string {
  const table = `"${tableName}"`;
  return `SELECT c.reltuples::float8 AS reltuples, c.relpages::float8 AS relpages,
            (pg_relation_size(c.oid) / current_setting('block_size')::int)::float8 AS pages,
            pg_total_relation_size(c.oid)::float8 AS total_bytes,
            (SELECT extract(epoch FROM now() - min(expires_at)) * 1000 FROM ${table} WHERE expires_at < now())::float8 AS lag_ms,
            (SELECT extract(epoch FROM now() - processed_at) * 1000 FROM ${table} WHERE expires_at >= now()
             ORDER BY expires_at LIMIT 1)::float8 AS oldest_age_ms
     FROM pg_class c WHERE c.oid = '${table}'::regclass`;
}

/**
 * The planner's own estimate: the row density of the last ANALYZE or VACUUM times the table's
 * current pages. Null when the table was never analysed, or was analysed empty and has grown since.
 */
export function estimateRows({ reltuples, relpages, pages }: StoreStatistics): number | null {
  if (reltuples < 0 || (relpages === 0 && pages > 0)) {
    return null;
  }
  return relpages === 0 ? 0 : Math.round((reltuples / relpages) * pages);
}

/** The figures of a `storeStatisticsSql()` row. */
export function toStoreFigures(statistics: StoreStatistics): StoreFigures {
  return { estimatedRows: estimateRows(statistics), totalBytes: statistics.total_bytes, lagMs: statistics.lag_ms, oldestAgeMs: statistics.oldest_age_ms };
}
