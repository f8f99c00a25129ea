import type { StoreDatabase } from '../../test/support/store-database.js';

/** The server's WAL position and counters at one moment. */
interface WalMark {
  lsn: string;
  fpi: number;
  records: number;
  checkpoints: number;
  otherCommits: number;
}

/**
 * The WAL the server wrote between two marks. The LSN difference is the whole server's: another
 * database's work in the window would count too, so `otherDatabasesCommits` says how many
 * transactions other databases committed meanwhile. The counters of `pg_stat_wal` come from the
 * backends' statistics, flushed when they exit (the measured pools are closed before the end mark).
 */
export interface WalWindow {
  bytes: number;
  records: number;
  fullPageImages: number;
  checkpoints: number;
  otherDatabasesCommits: number;
  /**
   * Bytes of full-page images among `bytes`, read back from the WAL with pg_walinspect; null where
   * it could not be (the extension is missing, or a checkpoint in the window recycled its first
   * segments).
   */
  fullPageImageBytes: number | null;
}

async function mark(database: StoreDatabase): Promise<WalMark> {
  const [row] = await database.query<{ lsn: string; fpi: string; records: string; checkpoints: string; other_commits: string }>(
    `SELECT pg_current_wal_lsn()::text AS lsn, w.wal_fpi AS fpi, w.wal_records AS records,
            b.checkpoints_timed + b.checkpoints_req AS checkpoints,
            (SELECT sum(xact_commit) FROM pg_stat_database WHERE datname IS DISTINCT FROM current_database()) AS other_commits
     FROM pg_stat_wal w, pg_stat_bgwriter b`,
  );
  return { lsn: row.lsn, fpi: Number(row.fpi), records: Number(row.records), checkpoints: Number(row.checkpoints), otherCommits: Number(row.other_commits) };
}

/**
 * Runs `work` between two marks and returns its result with the WAL written meanwhile. The end
 * mark waits a second, so that the backends that exited have flushed their statistics.
 */
export async function measureWal<T>(database: StoreDatabase, work: () => Promise<T>): Promise<{ result: T; wal: WalWindow }> {
  await database.query('SELECT pg_stat_clear_snapshot()');
  const start = await mark(database);
  const result = await work();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  await database.query('SELECT pg_stat_clear_snapshot()');
  const end = await mark(database);
  const [{ bytes }] = await database.query<{ bytes: string }>('SELECT pg_wal_lsn_diff($1, $2) AS bytes', [end.lsn, start.lsn]);
  const fullPageImageBytes = await readFullPageImageBytes(database, start.lsn, end.lsn);
  return {
    result,
    wal: {
      bytes: Number(bytes),
      records: end.records - start.records,
      fullPageImages: end.fpi - start.fpi,
      checkpoints: end.checkpoints - start.checkpoints,
      otherDatabasesCommits: end.otherCommits - start.otherCommits,
      fullPageImageBytes,
    },
  };
}

async function readFullPageImageBytes(database: StoreDatabase, start: string, end: string): Promise<number | null> {
  try {
    await database.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    const [{ fpi }] = await database.query<{ fpi: string }>('SELECT sum(fpi_size) AS fpi FROM pg_get_wal_stats($1, $2)', [start, end]);
    return Number(fpi);
  } catch {
    return null;
  }
}
