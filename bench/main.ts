// `npm run bench`: measures what exactly-once costs (issue 5) and writes
// bench/results/<date>.json and bench/results/latest.svg. See docs/benchmarks.md.
import 'reflect-metadata';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArguments } from './bench.settings.js';
import { type BenchContext, CaseSkipped } from './cases/bench-case.js';
import { startBenchApp } from '../test/support/bench-processes.js';
import { openBenchDatabase } from '../test/support/bench-database.js';
import { ensureBenchPackage } from './support/bench-packages.js';
import { probeRedis, REDIS_URL } from '../test/support/brokers.js';
import { deleteRunKeys } from '../test/support/broker-clients.js';
import { type BenchRuntime, prepareRuntimes } from './support/bench-runtime.js';
import { renderChart } from './support/chart.js';
import { type AppRuntime, type BenchResults, type CaseResult, describeMachine, describeMeasured, markdownTable } from './support/results.js';
import { round } from './support/stats.js';

const RESULTS_DIR = join(process.cwd(), 'bench', 'results');

async function main(): Promise<void> {
  const started = Date.now();
  const { settings, cases: selected, node } = parseArguments(process.argv.slice(2));
  const log = (line: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);
  const measured = describeMeasured();
  log(`measuring nestjs-idempotent-consumer ${measured.version} at ${measured.commit}`);
  await probeRedis().catch((error: unknown) => {
    throw new Error(`Redis does not answer at ${REDIS_URL} (${(error as Error).message}): the lease-mode handlers need it; set REDIS_URL`);
  });
  const runtimes = await prepareRuntimes(node, log);
  await ensureBenchPackage('peer', [], log);
  // Imported only now: the cases import the bench app, which loads the peer from bench/peer.
  const { CASES } = await import('./cases/index.js');
  const database = await openBenchDatabase();
  log(
    `PostgreSQL ${database.serverVersion} (${database.server}); ${cpus().length} cores; apps on Node ${runtimes.headline.version}` +
      `${runtimes.beside ? ` (case 1 also on ${runtimes.beside.version})` : ''}; ${settings.quick ? 'QUICK trial' : 'full run'}`,
  );
  const results: CaseResult[] = [];
  try {
    const context: BenchContext = {
      settings,
      database,
      runtimes,
      log,
      startApp: (platform, runtime = runtimes.headline, options) => startBenchApp(platform, database.url, runtime, options),
    };
    for (const benchCase of CASES) {
      if (selected && !selected.includes(benchCase.id)) {
        results.push({ id: benchCase.id, title: benchCase.title, status: 'not run', reason: 'not selected with --cases' });
        continue;
      }
      const settling = Date.now();
      await database.settle();
      log(`case ${benchCase.id}: ${benchCase.title} (database settled in ${((Date.now() - settling) / 1000).toFixed(1)} s)`);
      const caseStarted = Date.now();
      const before = loadavg()[0];
      const timing = () => ({ seconds: round((Date.now() - caseStarted) / 1000, 1), loadAverage: { before, after: loadavg()[0] } });
      try {
        const report = await benchCase.run(context);
        results.push({ id: benchCase.id, title: benchCase.title, status: 'measured', ...timing(), ...report });
      } catch (error) {
        const skipped = error instanceof CaseSkipped;
        log(`case ${benchCase.id} ${skipped ? 'skipped' : 'FAILED'}: ${error instanceof Error ? error.message : String(error)}`);
        results.push({ id: benchCase.id, title: benchCase.title, status: skipped ? 'skipped' : 'failed', reason: String(error instanceof Error ? error.message : error), ...timing() });
      }
    }
  } finally {
    await database.close();
    log(`deleted the run's ${await deleteRunKeys()} Redis keys`);
  }
  results.sort((a, b) => a.id - b.id);

  const date = new Date(started).toISOString();
  const report: BenchResults = {
    date,
    measured,
    quick: settings.quick,
    command: ['npm run bench', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' '),
    machine: describeMachine(),
    appRuntimes: {
      headline: describeRuntime(runtimes.headline),
      ...(runtimes.beside ? { beside: describeRuntime(runtimes.beside) } : {}),
    },
    database: { server: database.server, version: database.serverVersion },
    method: {
      rounds: settings.rounds,
      roundSeconds: settings.roundSeconds,
      warmupSeconds: settings.warmupSeconds,
      connections: settings.connections,
      memoryCheckpoints: settings.memoryCheckpoints,
      consumerMessages: settings.consumerMessages,
      description:
        'Each case runs its variants in turn (A/B/A/B) after an unmeasured warm-up of each, and reports the median of the rounds ' +
        'for throughput, p50 and p99 separately; ratios are of the medians. The bench app runs in child processes (case 1: one ' +
        'per platform and variant), Nest logger off; autocannon runs in the runner process; every HTTP request carries a new ' +
        'Idempotency-Key unless replayed. The app processes run on appRuntimes.headline; case 1 also on appRuntimes.beside. ' +
        'The runner (autocannon included) runs on machine.node. Case 4 fills a RabbitMQ queue per variant with consumerMessages messages over the ' +
        'rounds, then times a consumer process draining it until the database holds every effect. App CPU is the app ' +
        'process\'s user + system time per request (or message). See docs/benchmarks.md.',
    },
    cases: results,
    totalSeconds: round((Date.now() - started) / 1000, 1),
  };
  // Only a full run of every case replaces the published results; trials go where git ignores them.
  const dir = settings.quick || selected ? join(RESULTS_DIR, 'trials') : RESULTS_DIR;
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${date.slice(0, 19).replace(/:/g, '-')}.json`);
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(join(dir, 'latest.svg'), renderChart(report));
  console.log(`\n${markdownTable(report)}\n`);
  log(`results: ${file} and ${join(dir, 'latest.svg')}`);
  if (results.some((result) => result.status === 'failed')) {
    process.exitCode = 1;
  }
}

const describeRuntime = ({ name, version, source }: BenchRuntime): AppRuntime => ({ name, version, source });

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
