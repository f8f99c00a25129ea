// `npm run bench:sizing`: measures what the processed-messages table costs at 10 million rows and
// scales it to 10,000 messages a second kept 7 days; writes bench/results/sizing-<date>.json and
// prints the table of libs/idempotency/docs/operations.md#sizing.
import 'reflect-metadata';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { alterTableSql, readStatistics, recommendedParameters, runChurn } from './sizing/churn.js';
import { startPurgeApp } from './sizing/purge-app.js';
import { startPrivateServer } from '../test/support/postgres-server.js';
import { openStoreDatabase, type StoreDatabase } from '../test/support/store-database.js';
import { extrapolate, type SizingResults, sizingTable, TARGET } from './sizing/sizing-report.js';
import { describeMachine } from './support/results.js';
import { DEFAULT_SERVER_URL, parseSizingArguments, type SizingSettings, TABLE } from './sizing/sizing.settings.js';
import { measureStorage } from './sizing/storage.js';
import { measureWal } from './sizing/wal-window.js';
import { MODULE_DEFAULTS, insertBulkRows } from './sizing/webhook-message.js';
import { runClaims } from './sizing/webhook-claims.js';

const RESULTS_DIR = join(process.cwd(), 'bench', 'results');
const DAY_MS = 86_400_000;
const PURGE_INTERVAL_SECONDS = MODULE_DEFAULTS.purge.intervalMs / 1000;

/** The server settings that decide the figures, as the results record them. */
const RECORDED_SETTINGS = [
  'full_page_writes',
  'wal_compression',
  'checkpoint_timeout',
  'max_wal_size',
  'shared_buffers',
  'synchronous_commit',
  'autovacuum',
  'autovacuum_naptime',
  'autovacuum_vacuum_cost_limit',
  'autovacuum_vacuum_cost_delay',
  'maintenance_work_mem',
];

async function main(): Promise<void> {
  const started = Date.now();
  const settings = parseSizingArguments(process.argv.slice(2));
  const log = (line: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);
  const loadBefore = loadavg()[0];
  const serverUrl = process.env.DATABASE_URL ?? DEFAULT_SERVER_URL;

  const database = await openStoreDatabase(serverUrl);
  let measured: Pick<SizingResults, 'server' | 'storage' | 'claims' | 'purge'>;
  let checkpointTimeoutSeconds: number;
  try {
    const server = {
      source: process.env.DATABASE_URL ? ('DATABASE_URL' as const) : ('default' as const),
      version: database.serverVersion,
      settings: await readSettings(database),
    };
    log(`PostgreSQL ${server.version} (${server.source}), database ${database.name}; ${settings.quick ? 'QUICK trial' : 'full run'}`);
    const [{ seconds }] = await database.query<{ seconds: number }>(`SELECT setting::int AS seconds FROM pg_settings WHERE name = 'checkpoint_timeout'`);
    checkpointTimeoutSeconds = seconds;
    measured = { server, ...(await measureMainServer(database, settings, log)) };
  } finally {
    await database.drop();
  }

  const churn = await measureChurn(serverUrl, settings, log);
  const holdMsMean = measured.claims.holdMs.mean;
  const date = new Date(started).toISOString();
  const results: SizingResults = {
    date,
    quick: settings.quick,
    command: ['npm run bench:sizing', ...(settings.quick ? ['--', '--quick'] : [])].join(' '),
    machine: { ...describeMachine(), loadAverage: { before: loadBefore, after: loadavg()[0] } },
    ...measured,
    churn,
    recommendedParameters: recommendedParameters(TARGET.messagesPerSecond, PURGE_INTERVAL_SECONDS),
    connections: {
      holdMsMean,
      // Little's law: connections busy = arrival rate × time each holds one.
      claimOnly: (TARGET.messagesPerSecond * holdMsMean) / 1000,
      perHandlerMillisecond: TARGET.messagesPerSecond / 1000,
    },
    extrapolation: extrapolate(measured, checkpointTimeoutSeconds),
    totalSeconds: Math.round((Date.now() - started) / 1000),
  };
  const dir = settings.quick ? join(RESULTS_DIR, 'trials') : RESULTS_DIR;
  await mkdir(dir, { recursive: true });
  const file = join(dir, `sizing-${date.slice(0, 19).replace(/:/g, '-')}.json`);
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\n${sizingTable(results)}\n\nRecommended for ${TARGET.messagesPerSecond.toLocaleString('en-US')}/s: ${alterTableSql(results.recommendedParameters)};\n`);
  log(`results: ${file}`);
}

async function readSettings(database: StoreDatabase): Promise<Record<string, string>> {
  return Object.fromEntries(await Promise.all(RECORDED_SETTINGS.map(async (name) => [name, await database.setting(name)])));
}

/** Storage, WAL per claim and connection time, purge rate and WAL, on the server the sizing is for. */
async function measureMainServer(database: StoreDatabase, settings: SizingSettings, log: (line: string) => void) {
  // The first `expiredRows` expired within the last day; the others expire over the days after.
  await insertBulkRows(database, { count: settings.rows, firstExpiry: new Date(Date.now() - DAY_MS), expirySpacingMs: DAY_MS / settings.expiredRows, log });
  await database.query(`VACUUM ANALYZE ${TABLE}`);
  const storage = await measureStorage(database);
  log(`storage: ${storage.bytesPerRow.total} bytes per row (table ${storage.bytesPerRow.table}, indexes ${JSON.stringify(storage.bytesPerRow.indexes)})`);

  // A checkpoint first, so that no checkpoint forced by the bulk rows' WAL falls into the window.
  await database.query('CHECKPOINT');
  const statsBefore = await tableCounters(database);
  const { result: load, wal } = await measureWal(database, () =>
    database.withDataSource(settings.concurrency, (dataSource) => runClaims(dataSource, { count: settings.claims, concurrency: settings.concurrency })),
  );
  const statsAfter = await tableCounters(database);
  const [{ total }] = await database.query<{ total: string }>(`SELECT pg_total_relation_size('${TABLE}') AS total`);
  const claims = {
    ...load,
    wal,
    walBytesPerClaim: wal.bytes / load.claims,
    fullPageImagesPerClaim: wal.fullPageImages / load.claims,
    growthBytesPerClaim: (Number(total) - storage.totalBytes) / load.claims,
    hotUpdateShare: (statsAfter.hot - statsBefore.hot) / (statsAfter.updates - statsBefore.updates),
  };
  log(
    `claims: ${load.claims} at ${load.claimsPerSecond.toFixed(0)}/s, held ${load.holdMs.mean.toFixed(2)} ms; WAL ${claims.walBytesPerClaim.toFixed(0)} B and ` +
      `${claims.fullPageImagesPerClaim.toFixed(2)} full-page images per claim (${wal.checkpoints} checkpoints in the window)`,
  );

  await database.query('CHECKPOINT');
  const purgeApp = await startPurgeApp(database.url, { poolSize: 1, timer: false });
  const { result: run, wal: purgeWal } = await measureWal(database, async () => {
    try {
      return await purgeApp.purgeNow();
    } finally {
      await purgeApp.close();
    }
  });
  const rowsPerSecond = run.rows / (run.durationMs / 1000);
  log(`purge: ${run.rows} rows in ${run.batches} batches, ${run.durationMs} ms = ${rowsPerSecond.toFixed(0)} rows/s; WAL ${(purgeWal.bytes / run.rows).toFixed(1)} B per row`);
  const vacuumStarted = performance.now();
  const { wal: vacuumWal } = await measureWal(database, () => database.query(`VACUUM ${TABLE}`));
  const vacuumSeconds = (performance.now() - vacuumStarted) / 1000;
  log(`vacuum after the purge: ${vacuumSeconds.toFixed(1)} s; WAL ${(vacuumWal.bytes / run.rows).toFixed(1)} B per purged row`);
  const purge = {
    batchSize: MODULE_DEFAULTS.purge.batchSize,
    rows: run.rows,
    batches: run.batches,
    durationMs: run.durationMs,
    rowsPerSecond,
    headroom: rowsPerSecond / TARGET.messagesPerSecond,
    wal: purgeWal,
    walBytesPerRow: purgeWal.bytes / run.rows,
    vacuum: { seconds: vacuumSeconds, wal: vacuumWal, walBytesPerRow: vacuumWal.bytes / run.rows },
  };
  return { storage, claims, purge };
}

async function tableCounters(database: StoreDatabase): Promise<{ updates: number; hot: number }> {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const row = await readStatistics(database);
  return { updates: Number(row.n_tup_upd), hot: Number(row.n_tup_hot_upd) };
}

/**
 * Dead tuples under churn, with the server's defaults and with the recommended parameters, on a
 * table whose rows expire at the churn's arrival rate. Autovacuum must run for this: on a server
 * where it is off (the setting is the whole server's, no table can turn it on), the churn runs on
 * a server of its own with the default settings, of the same version when it can.
 */
async function measureChurn(serverUrl: string, settings: SizingSettings, log: (line: string) => void): Promise<SizingResults['churn']> {
  const probe = await openStoreDatabase(serverUrl);
  const autovacuum = await probe.setting('autovacuum');
  await probe.drop();
  const privateServer = autovacuum === 'on' ? undefined : await startPrivateServer(serverUrl);
  try {
    const database = await openStoreDatabase(privateServer?.url ?? serverUrl);
    try {
      const server = {
        source: privateServer ? `${privateServer.source} (the measured server's autovacuum is ${autovacuum})` : 'the measured server',
        version: database.serverVersion,
        autovacuumNaptime: await database.setting('autovacuum_naptime'),
      };
      log(`churn on PostgreSQL ${server.version}, ${server.source}`);
      await insertBulkRows(database, { count: settings.churnRows, firstExpiry: new Date(), expirySpacingMs: 1000 / settings.churnRate, log });
      await database.query(`VACUUM ANALYZE ${TABLE}`);
      const churn = { rate: settings.churnRate, seconds: settings.churnSeconds, concurrency: settings.churnConcurrency, sampleSeconds: settings.sampleSeconds, log };
      log(`churn with the defaults: ${settings.churnRate} claims/s for ${settings.churnSeconds} s`);
      const defaults = await runChurn(database, { ...churn, parameters: null });
      const parameters = recommendedParameters(settings.churnRate, PURGE_INTERVAL_SECONDS);
      log(`churn with ${alterTableSql(parameters)}`);
      const recommended = await runChurn(database, { ...churn, parameters });
      return { server, rate: settings.churnRate, defaults, recommended };
    } finally {
      await database.drop();
    }
  } finally {
    await privateServer?.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
