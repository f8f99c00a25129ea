import { type BenchAppProcess, type Platform, PLATFORMS, type ProcessLaunch, startBenchApp, startConsumerProcess } from '../../test/support/bench-processes.js';
import { RABBITMQ_URL } from '../../test/support/brokers.js';
import { openBenchBroker } from '../../test/support/broker-clients.js';
import type { Callgrind, InstructionWindows } from '../support/callgrind.js';
import { nthCredit } from '../support/http-load.js';
import {
  type ArmInstructions,
  inParallel,
  instructionsFigure,
  kilobytes,
  measureArm,
  openInstructionCase,
  PARALLEL_ARMS,
  REQUEST_TIMEOUT_SECONDS,
  type RunningArm,
  runningHttpArm,
  signedThousands,
  thousands,
} from '../support/instruction-arms.js';
import { lastLedgerRow, waitForEffects } from '../../test/support/ledger.js';
import { CREDIT_PATTERNS } from '../../test/apps/bench/bench-messages.controller.js';
import { type BenchCase, type BenchContext, type CaseReport, checkFloor } from './bench-case.js';
import { type DatabaseInstructions, measureDatabaseInstructions } from './instructions.database.js';
import { PEER_LABEL } from './peer.case.js';

/** The arms: each a route of the bench app (or a handler of the consumer), first deliveries or replays of one key. */
type HttpRoute = 'plain' | 'idempotent' | 'lease-redis' | 'peer';
type HttpArm = { readonly route: HttpRoute; readonly replays: boolean };
const HTTP_ARMS: readonly HttpArm[] = [
  { route: 'plain', replays: false },
  { route: 'idempotent', replays: false },
  { route: 'lease-redis', replays: false },
  { route: 'peer', replays: false },
  { route: 'idempotent', replays: true },
  { route: 'peer', replays: true },
];
const ROUTE_NAMES: Record<HttpRoute, string> = { plain: 'plain', idempotent: 'idempotent', 'lease-redis': 'idempotent, lease on Redis', peer: PEER_LABEL };
type MessageArm = 'plain' | 'idempotent';
const MESSAGE_ARMS: readonly MessageArm[] = ['plain', 'idempotent'];

/** The issue's goals, in instructions: what ours may add to a first delivery beyond plain, over HTTP and over RabbitMQ, and on the database. */
const HTTP_ADDED_GOAL = 300_000;
const MESSAGE_ADDED_GOAL = 150_000;
const DATABASE_ADDED_GOAL = 362_000;

/**
 * Case 16: instructions executed per request, counted by valgrind's callgrind in the app process
 * alone: an instrument that barely moves with the machine's load, unlike throughput and CPU time.
 * Every arm runs in a process of its own (the replay cache of one route does not grow the heap
 * another is measured in) on Node 24 with `--single-threaded --predictable-gc-schedule`; a full
 * garbage collection before each window; warm-up windows until two in a row agree; then
 * `windows` windows of `window` requests at `connections` connections, counted between
 * `callgrind_control -z` and `-d`. Each arm runs once more without valgrind, the same requests,
 * for its CPU time per request and, over HTTP, the bytes it allocates per request on the V8 heap
 * (read from the heap's use around each garbage collection: `test/apps/bench/process-usage.ts`). Arms: plain, ours, ours in lease mode on Redis and the peer, first
 * deliveries and replays of one key, on Express and Fastify; the RabbitMQ consumer, plain and
 * ours; and the database: a single-user PostgreSQL backend under callgrind replaying the
 * statements the app sent for one plain and one idempotent first delivery (see `instructions.database.ts`).
 */
export const instructions: BenchCase = {
  id: 16,
  title: 'Instructions per request (valgrind callgrind)',
  async run(context): Promise<CaseReport> {
    const { callgrind, how, report } = await openInstructionCase(context);
    try {
      const items = PLATFORMS.flatMap((platform) => HTTP_ARMS.map((arm) => ({ platform, arm })));
      const counts = await inParallel(items, PARALLEL_ARMS, ({ platform, arm }) =>
        measureArm(context, how, callgrind, `${platform} ${armName(arm)}`, (launch) => httpArm(context, how, platform, arm, launch)),
      );
      const measured = new Map(items.map(({ platform, arm }, i) => [`${platform} ${armName(arm)}`, counts[i]]));
      for (const platform of PLATFORMS) {
        const arms = Object.fromEntries(HTTP_ARMS.map((arm) => [armName(arm), measured.get(`${platform} ${armName(arm)}`) as ArmInstructions]));
        report.details[platform] = arms;
        reportHttp(report, platform, arms);
      }
      // One consumer at a time: each window counts its effects in the ledger, which no other arm then writes.
      report.details.rabbitmq = await measureMessages(context, how, callgrind, report);
    } finally {
      await callgrind.close();
    }
    const database = await measureDatabaseInstructions(context, how);
    report.details.database = database;
    reportDatabase(report, database);
    return report;
  },
};

function armName({ route, replays }: HttpArm): string {
  return replays ? `${route} replays` : route;
}

/** The bench app on `platform`, its requests to `arm`'s route: each a new key, or all the one key it has processed first. */
async function httpArm({ database, runtimes }: BenchContext, how: InstructionWindows, platform: Platform, arm: HttpArm, launch: ProcessLaunch): Promise<RunningArm> {
  const app: BenchAppProcess = await startBenchApp(platform, database.url, runtimes.headline, {}, launch);
  const label = `c16-${platform}-${armName(arm).replace(' ', '-')}-${launch.wrapper ? 'counted' : 'native'}-${Date.now().toString(36)}`;
  return runningHttpArm(app, how, { path: `/${arm.route}/credits`, label, replays: arm.replays });
}

/** The RabbitMQ consumer arms, each in a consumer process of its own, consuming a queue the runner fills window by window. */
async function measureMessages({ database, runtimes, ...context }: BenchContext, how: InstructionWindows, callgrind: Callgrind, report: CaseReport) {
  const broker = await openBenchBroker().catch(() => undefined);
  if (!broker) {
    report.rows.push({ variant: `RabbitMQ: not measured, RabbitMQ is not reachable at ${RABBITMQ_URL}` });
    return undefined;
  }
  const arms: Partial<Record<MessageArm, ArmInstructions>> = {};
  try {
    for (const variant of MESSAGE_ARMS) {
      arms[variant] = await measureArm({ database, runtimes, ...context }, how, callgrind, `rabbitmq ${variant}`, async (launch) => {
        const consumer = await startConsumerProcess('rabbitmq', runtimes.headline, { BENCH_DATABASE_URL: database.url, BENCH_RABBITMQ_URL: broker.url }, launch);
        const queue = `bench-c16-${variant}-${process.pid}-${Date.now().toString(36)}`;
        // Under valgrind a message may take as long as a request may: the ledger's default 30 s stall limit is a native consumer's.
        const stallMs = launch.wrapper ? REQUEST_TIMEOUT_SECONDS * 1000 : undefined;
        await broker.declareQueue(queue);
        await consumer.consume(queue);
        let sent = 0;
        return {
          pid: consumer.pid,
          collect: () => consumer.collect(),
          send: async (messages) => {
            const last = await lastLedgerRow(database);
            const first = sent;
            sent += messages;
            await broker.publish(
              queue,
              Array.from({ length: messages }, (_, n) => ({ messageId: `${queue}-${first + n}`, pattern: CREDIT_PATTERNS[variant], data: nthCredit(first + n) })),
            );
            await waitForEffects(database, last, messages, stallMs);
          },
          cpu: () => consumer.collect(),
          stop: async () => {
            await consumer.stop();
            await broker.deleteQueue(queue);
          },
        };
      });
    }
  } finally {
    await broker.close();
  }
  const { plain, idempotent } = arms as Record<MessageArm, ArmInstructions>;
  const added = idempotent.median - plain.median;
  report.rows.push(
    { variant: 'RabbitMQ (Nest), plain', appCpuMicros: plain.cpuMicros, figure: instructionsFigure(plain) },
    { variant: 'RabbitMQ (Nest), idempotent', appCpuMicros: idempotent.cpuMicros, figure: `${instructionsFigure(idempotent)}; ${signedThousands(added)} over plain` },
  );
  report.floors.push(checkFloor('RabbitMQ: instructions ours adds per message (goal)', added, 'at most', MESSAGE_ADDED_GOAL));
  report.chart.push({
    title: '16 · instructions per message · RabbitMQ (Nest)',
    unit: 'k instructions',
    bars: [
      { label: 'plain', value: plain.median / 1000, series: 0 },
      { label: 'ours', value: idempotent.median / 1000, series: 1 },
    ],
    note: `ours − plain = ${signedThousands(added)} (goal ≤ +${thousands(MESSAGE_ADDED_GOAL)})`,
    met: added <= MESSAGE_ADDED_GOAL,
  });
  return { prefetch: 'as case 4', arms, added };
}

/** The rows, goals and chart group of one platform's HTTP arms. */
function reportHttp(report: CaseReport, platform: Platform, arms: Record<string, ArmInstructions>): void {
  const plain = arms.plain.median;
  const added = (name: string) => arms[name].median - plain;
  for (const arm of HTTP_ARMS) {
    const name = armName(arm);
    const over = arm.route === 'plain' ? '' : arm.replays ? '; a replay' : `; ${signedThousands(added(name))} over plain`;
    const allocated = arms[name].allocatedBytes;
    report.rows.push({
      variant: `${platform}, ${ROUTE_NAMES[arm.route]}${arm.replays ? ' replays' : ''}`,
      appCpuMicros: arms[name].cpuMicros,
      figure: `${instructionsFigure(arms[name])}${over}${allocated === undefined ? '' : `; ${kilobytes(allocated)} allocated`}`,
    });
  }
  report.floors.push(
    checkFloor(`${platform}: instructions ours adds per first delivery, against the peer's`, added('idempotent'), 'at most', added('peer')),
    checkFloor(`${platform}: instructions ours adds per first delivery (goal)`, added('idempotent'), 'at most', HTTP_ADDED_GOAL),
    checkFloor(`${platform}: instructions per replay, ours against the peer's`, arms['idempotent replays'].median, 'at most', arms['peer replays'].median),
  );
  report.chart.push({
    title: `16 · instructions per request · ${platform}`,
    unit: 'k instructions',
    bars: [
      { label: 'plain', value: plain / 1000, series: 0 },
      { label: 'ours', value: arms.idempotent.median / 1000, series: 1 },
      { label: 'ours, lease', value: arms['lease-redis'].median / 1000, series: 3 },
      { label: 'peer', value: arms.peer.median / 1000, series: 2 },
      { label: 'ours, replay', value: arms['idempotent replays'].median / 1000, series: 1 },
      { label: 'peer, replay', value: arms['peer replays'].median / 1000, series: 2 },
    ],
    note: `ours − plain = ${signedThousands(added('idempotent'))}, peer − plain = ${signedThousands(added('peer'))}`,
    met: added('idempotent') <= added('peer'),
  });
}

function reportDatabase(report: CaseReport, database: DatabaseInstructions | { skipped: string }): void {
  if ('skipped' in database) {
    report.rows.push({ variant: `database: not measured, ${database.skipped}` });
    return;
  }
  const { plain, idempotent, added } = database;
  report.rows.push(
    { variant: 'database, plain transaction', figure: `${instructionsFigure(plain)} per transaction` },
    { variant: 'database, idempotent first delivery', figure: `${instructionsFigure(idempotent)} per transaction; ${signedThousands(added)} over plain` },
  );
  report.floors.push(checkFloor('database: instructions ours adds per first delivery with a recorded response (no regression)', added, 'at most', DATABASE_ADDED_GOAL));
}
