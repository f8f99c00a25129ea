import { type BenchAppProcess, type Platform, PLATFORMS, type ProcessLaunch, startBenchApp } from '../support/bench-app.process.js';
import { openBenchBroker, RABBITMQ_URL } from '../support/bench-broker.js';
import { startBenchConsumer } from '../support/bench-consumer.process.js';
import { type Callgrind, type InstructionWindows, openCallgrind } from '../support/callgrind.js';
import { creditBody, nthCredit, runHttpLoad, uniqueCredits } from '../support/http-load.js';
import { lastLedgerRow, waitForEffects } from '../support/ledger-effects.js';
import { median, round } from '../support/stats.js';
import { CREDIT_PATTERNS } from '../app/bench-messages.controller.js';
import { type BenchCase, type BenchContext, type CaseReport, CaseSkipped, checkFloor, emptyReport } from './bench-case.js';
import { type DatabaseInstructions, measureDatabaseInstructions } from './instructions.database.js';
import { PEER_LABEL } from './peer.case.js';

const FULL: InstructionWindows = { connections: 4, preWarmup: 1000, warmupWindow: 200, settledWithin: 0.03, maxWarmupWindows: 4, windows: 3, window: 200 };
const QUICK: InstructionWindows = { connections: 4, preWarmup: 300, warmupWindow: 100, settledWithin: 0.05, maxWarmupWindows: 2, windows: 3, window: 100 };

/**
 * HTTP arms measured at once, each in its own process: the counts do not depend on it, and
 * valgrind slows each process some 50 times, so the case's wall time does.
 */
const PARALLEL_ARMS = 3;

/**
 * How long a request may take: under valgrind on a loaded machine one can take more than
 * autocannon's default 10 s, and a request autocannon gives up on is one the window did not count.
 */
const REQUEST_TIMEOUT_SECONDS = 300;

/** Node options of every process of the case: no V8 background threads, and its collector on a fixed schedule, so a count depends on the requests alone. */
const NODE_ARGS = ['--single-threaded', '--predictable-gc-schedule'];

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

/** The goals, in instructions: what ours may add to a first delivery beyond plain, over HTTP and over RabbitMQ, and on the database. */
const HTTP_ADDED_GOAL = 300_000;
const MESSAGE_ADDED_GOAL = 150_000;
const DATABASE_ADDED_GOAL = 362_000;

/** One arm's counts, per request (or message). */
export interface ArmInstructions {
  /** Instructions per request of each warm-up window, then of each measured window. */
  readonly warmup: number[];
  readonly windows: number[];
  readonly median: number;
  readonly min: number;
  readonly max: number;
  /** (max − min) / median, in %. */
  readonly spreadPercent: number;
  /** The app's CPU time per request in the same arm run natively (no valgrind), each window and the median. */
  readonly cpuWindows: number[];
  readonly cpuMicros: number;
}

/**
 * Case 16: instructions executed per request, counted by valgrind's callgrind in the app process
 * alone: an instrument that barely moves with the machine's load, unlike throughput and CPU time.
 * Every arm runs in a process of its own (the replay cache of one route does not grow the heap
 * another is measured in) on Node 24 with `--single-threaded --predictable-gc-schedule`; a full
 * garbage collection before each window; warm-up windows until two in a row agree; then
 * `windows` windows of `window` requests at `connections` connections, counted between
 * `callgrind_control -z` and `-d`. Each arm runs once more without valgrind, the same requests,
 * for its CPU time per request. Arms: plain, ours, ours in lease mode on Redis and the peer, first
 * deliveries and replays of one key, on Express and Fastify; the RabbitMQ consumer, plain and
 * ours; and the database: a single-user PostgreSQL backend under callgrind replaying the
 * statements the app sent for one plain and one idempotent first delivery (see `instructions.database.ts`).
 */
export const instructions: BenchCase = {
  id: 16,
  title: 'Instructions per request (valgrind callgrind)',
  async run(context): Promise<CaseReport> {
    const callgrind = await openCallgrind();
    if (!callgrind) {
      throw new CaseSkipped('valgrind (with callgrind_control) is not installed');
    }
    const how = context.settings.quick ? QUICK : FULL;
    const report = emptyReport();
    report.details.method = { ...how, nodeArgs: NODE_ARGS, valgrind: callgrind.version, runtime: context.runtimes.headline.version };
    try {
      const measured = await inParallel(
        PLATFORMS.flatMap((platform) => HTTP_ARMS.map((arm) => ({ platform, arm }))),
        PARALLEL_ARMS,
        ({ platform, arm }) => measureArm(context, how, callgrind, `${platform} ${armName(arm)}`, (launch) => httpArm(context, how, platform, arm, launch)),
      );
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

/** Runs `measure` on every item, at most `limit` at once; the results by the item's platform and arm. */
async function inParallel<T extends { platform: Platform; arm: HttpArm }>(items: T[], limit: number, measure: (item: T) => Promise<ArmInstructions>) {
  const results = new Map<string, ArmInstructions>();
  const queue = [...items];
  const worker = async () => {
    for (let item = queue.shift(); item; item = queue.shift()) {
      results.set(`${item.platform} ${armName(item.arm)}`, await measure(item));
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

function armName({ route, replays }: HttpArm): string {
  return replays ? `${route} replays` : route;
}

/** An arm started in its own process: how to run one window of `requests`, its CPU time before and after, and how to stop. */
interface RunningArm {
  readonly pid: number;
  /** Runs a full garbage collection; resolves with the process's CPU time (µs). */
  collect(): Promise<number>;
  /** Sends `requests` requests (or messages) and waits until each is answered (or its effect is in the database). */
  send(requests: number): Promise<void>;
  /** The process's CPU time (µs) now. */
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Measures an arm twice, each in a process of its own: under callgrind (instructions per request,
 * warm-up windows until two agree), then natively with as many warm-up requests (CPU time per request).
 */
async function measureArm(
  { log }: BenchContext,
  how: InstructionWindows,
  callgrind: Callgrind,
  name: string,
  start: (launch: ProcessLaunch) => Promise<RunningArm>,
): Promise<ArmInstructions> {
  const started = performance.now();
  const counted = await start({ wrapper: callgrind.wrapper, nodeArgs: NODE_ARGS });
  const warmup: number[] = [];
  const windows: number[] = [];
  try {
    await counted.send(how.preWarmup);
    await callgrind.instrument(counted.pid);
    const countWindow = async (requests: number) => {
      await counted.collect();
      const { instructions } = await callgrind.count(counted.pid, () => counted.send(requests));
      return instructions / requests;
    };
    const settled = () => warmup.length >= 2 && Math.abs(warmup.at(-1)! - warmup.at(-2)!) <= how.settledWithin * warmup.at(-2)!;
    while (!settled() && warmup.length < how.maxWarmupWindows) {
      warmup.push(await countWindow(how.warmupWindow));
    }
    for (let w = 0; w < how.windows; w++) {
      windows.push(await countWindow(how.window));
    }
  } finally {
    await counted.stop();
  }
  const countedSeconds = (performance.now() - started) / 1000;
  const native = await start({ nodeArgs: NODE_ARGS });
  const cpuWindows: number[] = [];
  try {
    await native.send(how.preWarmup + warmup.length * how.warmupWindow);
    for (let w = 0; w < how.windows; w++) {
      const before = await native.collect();
      await native.send(how.window);
      cpuWindows.push(((await native.cpu()) - before) / how.window);
    }
  } finally {
    await native.stop();
  }
  const result = summarizeArm(warmup, windows, cpuWindows);
  log(
    `${name.padEnd(28)} ${thousands(result.median)} instr/req (${thousands(result.min)}–${thousands(result.max)}, ±${(result.spreadPercent / 2).toFixed(1)} %), ` +
      `warm-up ${warmup.map(thousands).join(', ')}; ${result.cpuMicros} µs/req native; ${countedSeconds.toFixed(0)} s under valgrind`,
  );
  return result;
}

function summarizeArm(warmup: number[], windows: number[], cpuWindows: number[]): ArmInstructions {
  const middle = median(windows);
  return {
    warmup: warmup.map(Math.round),
    windows: windows.map(Math.round),
    median: Math.round(middle),
    min: Math.round(Math.min(...windows)),
    max: Math.round(Math.max(...windows)),
    spreadPercent: round((100 * (Math.max(...windows) - Math.min(...windows))) / middle, 1),
    cpuWindows: cpuWindows.map(Math.round),
    cpuMicros: Math.round(median(cpuWindows)),
  };
}

/** The bench app on `platform`, its requests to `arm`'s route: each a new key, or all the one key it has processed first. */
async function httpArm({ database, runtimes }: BenchContext, how: InstructionWindows, platform: Platform, arm: HttpArm, launch: ProcessLaunch): Promise<RunningArm> {
  const app: BenchAppProcess = await startBenchApp(platform, database.url, runtimes.headline, {}, launch);
  const url = `${app.baseUrl}/${arm.route}/credits`;
  const label = `c16-${platform}-${armName(arm).replace(' ', '-')}-${launch.wrapper ? 'counted' : 'native'}-${Date.now().toString(36)}`;
  const replayed = { key: `${label}-replayed`, body: creditBody(0) };
  let sent = 0;
  const send = async (requests: number) => {
    const first = sent;
    sent += requests;
    const unique = uniqueCredits(label);
    await runHttpLoad({
      url,
      connections: how.connections,
      amount: requests,
      timeout: REQUEST_TIMEOUT_SECONDS,
      request: arm.replays ? () => replayed : (n) => unique(first + n),
    });
  };
  if (arm.replays) {
    await runHttpLoad({ url, connections: 1, amount: 1, timeout: REQUEST_TIMEOUT_SECONDS, request: () => replayed });
  }
  return {
    pid: app.pid,
    collect: async () => (await app.usage({ gc: true })).cpuMicros,
    send,
    cpu: async () => (await app.usage()).cpuMicros,
    stop: () => app.stop(),
  };
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
        const consumer = await startBenchConsumer(database.url, broker.url, runtimes.headline, launch);
        const queue = `bench-c16-${variant}-${process.pid}-${Date.now().toString(36)}`;
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
            await waitForEffects(database, last, messages);
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
    report.rows.push({
      variant: `${platform}, ${ROUTE_NAMES[arm.route]}${arm.replays ? ' replays' : ''}`,
      appCpuMicros: arms[name].cpuMicros,
      figure: `${instructionsFigure(arms[name])}${over}`,
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

/** `1,234k (1,201k–1,250k)`: a median and its range. */
function instructionsFigure({ median: middle, min, max }: { median: number; min: number; max: number }): string {
  return `${thousands(middle)} instr (${thousands(min)}–${thousands(max)})`;
}

/** `1,234k` */
function thousands(value: number): string {
  return `${Math.round(value / 1000).toLocaleString('en-US')}k`;
}

/** `+123k`, `−45k` */
function signedThousands(value: number): string {
  return `${value >= 0 ? '+' : '−'}${thousands(Math.abs(value))}`;
}
