import { runClaims } from './webhook-claims.js';
import { startPurgeApp } from './purge-app.js';
import type { StoreDatabase } from '../../test/support/store-database.js';
import { TABLE } from './sizing.settings.js';

/** Per-table storage parameters, as `ALTER TABLE ... SET (...)` takes them. */
export type StorageParameters = Readonly<Record<string, number>>;

/** The parameters this sizing recommends for a table that receives `rate` messages a second and is purged every `purgeIntervalSeconds`. */
export function recommendedParameters(rate: number, purgeIntervalSeconds: number): StorageParameters {
  // A fixed threshold, not a share of the table (20 % of a big table is hours or days of dead
  // rows before the first vacuum): half of what one purge run deletes, so that every run's dead
  // rows are vacuumed at the launcher's next visit.
  const halfAPurge = Math.round((rate * purgeIntervalSeconds) / 2);
  return {
    autovacuum_vacuum_scale_factor: 0,
    autovacuum_vacuum_threshold: halfAPurge,
    autovacuum_vacuum_insert_scale_factor: 0,
    autovacuum_vacuum_insert_threshold: halfAPurge,
    autovacuum_vacuum_cost_limit: 2000,
  };
}

/** `ALTER TABLE` that sets `parameters` on the processed-messages table. */
export function alterTableSql(parameters: StorageParameters): string {
  const list = Object.entries(parameters).map(([name, value]) => `${name} = ${value}`);
  return `ALTER TABLE ${TABLE} SET (${list.join(', ')})`;
}

/** One reading of the table's statistics during the churn. */
export interface ChurnSample {
  seconds: number;
  deadTuples: number;
  liveTuples: number;
  autovacuums: number;
}

export interface ChurnResult {
  /** The per-table parameters of this run; none: the server's defaults. */
  parameters: StorageParameters | null;
  seconds: number;
  claims: number;
  claimsPerSecond: number;
  purgedRows: number;
  purgeRuns: number;
  /** The last purge run's rows per second, while the claims ran. */
  purgeRowsPerSecond: number;
  autovacuums: number;
  maxDeadTuples: number;
  finalDeadTuples: number;
  /** Share of the recorded responses' UPDATEs that were HOT (no new index entries). */
  hotUpdateShare: number;
  samples: ChurnSample[];
}

/** What the churn runs: a paced claim load, the module's purge timer, and a sample every `sampleSeconds`. */
export interface Churn {
  rate: number;
  seconds: number;
  concurrency: number;
  sampleSeconds: number;
  parameters: StorageParameters | null;
  log(line: string): void;
}

interface TableStatistics {
  n_dead_tup: string;
  n_live_tup: string;
  autovacuum_count: string;
  n_tup_upd: string;
  n_tup_hot_upd: string;
}

export async function readStatistics(database: StoreDatabase): Promise<TableStatistics> {
  const [row] = await database.query<TableStatistics>(
    `SELECT n_dead_tup, n_live_tup, autovacuum_count, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = $1`,
    [TABLE],
  );
  return row;
}

/**
 * New webhook claims at `rate` a second while the module's purge timer (default interval and batch
 * size) deletes the rows that expire, and autovacuum does what the table's parameters let it:
 * `n_dead_tup` read from `pg_stat_user_tables` every `sampleSeconds`. The run starts from a
 * vacuumed table with no expired row left, and with the parameters set (or reset to the defaults).
 */
export async function runChurn(database: StoreDatabase, churn: Churn): Promise<ChurnResult> {
  const catchUp = await startPurgeApp(database.url, { poolSize: 1, timer: false });
  await catchUp.purgeNow();
  await catchUp.close();
  // The names of every parameter this sizing sets, whatever their values.
  const tuned = Object.keys(recommendedParameters(1, 1));
  await database.query(`ALTER TABLE ${TABLE} RESET (${tuned.join(', ')})`);
  if (churn.parameters) {
    await database.query(alterTableSql(churn.parameters));
  }
  await database.query(`VACUUM ${TABLE}`);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const before = await readStatistics(database);
  const app = await startPurgeApp(database.url, { poolSize: churn.concurrency + 1, timer: true });
  const started = performance.now();
  const samples: ChurnSample[] = [];
  const sample = async () => {
    const now = await readStatistics(database);
    const reading = {
      seconds: Math.round((performance.now() - started) / 1000),
      deadTuples: Number(now.n_dead_tup),
      liveTuples: Number(now.n_live_tup),
      autovacuums: Number(now.autovacuum_count) - Number(before.autovacuum_count),
    };
    samples.push(reading);
    churn.log(`  ${String(reading.seconds).padStart(4)} s  dead ${reading.deadTuples.toLocaleString('en-US').padStart(10)}  autovacuums ${reading.autovacuums}`);
  };
  await sample();
  const sampler = setInterval(() => void sample(), churn.sampleSeconds * 1000);
  let load: Awaited<ReturnType<typeof runClaims>>;
  let purge: ReturnType<typeof app.figures>;
  try {
    load = await runClaims(app.dataSource, { concurrency: churn.concurrency, seconds: churn.seconds, rate: churn.rate });
    purge = app.figures();
  } finally {
    clearInterval(sampler);
    await app.close();
  }
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await sample();
  const after = await readStatistics(database);
  const updates = Number(after.n_tup_upd) - Number(before.n_tup_upd);
  const lastRun = purge.lastRun;
  return {
    parameters: churn.parameters,
    seconds: load.seconds,
    claims: load.claims,
    claimsPerSecond: load.claimsPerSecond,
    purgedRows: purge.rows,
    purgeRuns: purge.runs.purged,
    purgeRowsPerSecond: lastRun === null || lastRun.durationMs === 0 ? 0 : lastRun.rows / (lastRun.durationMs / 1000),
    autovacuums: samples[samples.length - 1].autovacuums,
    maxDeadTuples: Math.max(...samples.map((each) => each.deadTuples)),
    finalDeadTuples: samples[samples.length - 1].deadTuples,
    hotUpdateShare: updates === 0 ? 0 : (Number(after.n_tup_hot_upd) - Number(before.n_tup_hot_upd)) / updates,
    samples,
  };
}
