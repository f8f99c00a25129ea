import { schemaSql } from 'nestjs-idempotent-consumer';
import type { ProcessLaunch } from '../../test/support/bench-processes.js';
import { RABBITMQ_URL } from '../../test/support/brokers.js';
import { type BenchBroker, consumeArrivals, openBenchBroker } from '../../test/support/broker-clients.js';
import { until } from '../../test/support/test-database.js';
import type { OutboxBenchConfig } from '../../test/apps/bench/outbox-bench.module.js';
import type { InstructionWindows } from '../support/callgrind.js';
import { runFixedRateLoad } from '../support/fixed-rate-load.js';
import { runHttpLoad, uniqueCredits } from '../support/http-load.js';
import { addedHalfSpread, armFigure, type ArmInstructions, inParallel, measureArm, openInstructionCase, PARALLEL_ARMS, REQUEST_TIMEOUT_SECONDS, type RunningArm, runningHttpArm, signedThousands } from '../support/instruction-arms.js';
import { type HttpBenchProcess, startOutboxBenchApp } from '../../test/support/bench-processes.js';
import { percentile } from '../../test/support/latency.js';
import { round } from '../support/stats.js';
import { type BenchCase, type BenchContext, type CaseReport, CaseSkipped } from './bench-case.js';

/**
 * The arms of the instruction count, each an `@IdempotentHandler()` crediting an account on TypeORM
 * and Express: `baseline` publishes nothing; `direct` publishes `credit.granted` to RabbitMQ after
 * the claim's COMMIT, awaited before the answer; `outbox` writes it with `Outbox.publish()` and its
 * process runs the relay (the whole cost of a message, relaying included); `outbox-request` is the
 * same route in a process without the relay, a relay process of its own (not counted) sending its messages.
 */
type OutboxArm = 'baseline' | 'direct' | 'outbox' | 'outbox-request';
const ARMS: readonly OutboxArm[] = ['baseline', 'direct', 'outbox', 'outbox-request'];
const ROUTES: Record<OutboxArm, string> = { baseline: '/baseline/credits', direct: '/direct/credits', outbox: '/outbox/credits', 'outbox-request': '/outbox/credits' };
const ARM_NAMES: Record<OutboxArm, string> = {
  baseline: 'baseline (no event)',
  direct: 'direct publish after COMMIT',
  outbox: 'outbox, relay in the process',
  'outbox-request': 'outbox, request path alone',
};

/**
 * The steady rates of the relay's throughput and lag, how long each runs, and the backlog drained.
 * At 500/s the 2-core machine, shared with other work, held 182/s (the app's requests and its
 * relay together): the rates stay below that, where the lags are the relay's and not a backlog's.
 */
const FULL_RELAY = { rates: [100, 200], seconds: 20, warmup: 1000, backlog: 10_000 };
const QUICK_RELAY = { rates: [100, 200], seconds: 5, warmup: 300, backlog: 2_000 };
/** Connections of the fixed-rate producer, as case 9's. */
const PRODUCER_CONNECTIONS = 20;
/** A steady run below this share of its rate did not hold it (as case 9 reports it): its lags are those of a producer falling behind. */
const RATE_HELD = 0.98;
/** How long the relay may take to send what a load wrote, once the load ended. */
const DRAIN_TIMEOUT_MS = 10 * 60_000;

/**
 * Case 18: what the transactional outbox costs a message, and how fast its relay sends. First, per
 * message, the instructions and CPU time of the app process, counted as case 16 counts
 * (`support/instruction-arms.ts`) on four arms (`ARMS`), each in a process, table and queue of its
 * own: a window of the `outbox` arm ends only once the relay has marked every message of it
 * dispatched, so the relay's work is in the window. Then the relay of one native app process at
 * steady rates of the outbox route (`support/fixed-rate-load.ts`): a consumer in the runner takes
 * the messages off the queue and stamps each arrival; the lag of a message is its arrival less its
 * row's `created_at`, and the rows dispatched by one batch share its `dispatched_at`, which gives
 * the batch sizes. Last, a backlog written straight into a fresh outbox table, drained by one relay
 * process started on it. `BENCH_OUTBOX_RELAY_ONLY=1` skips the instruction arms (some 30 minutes of
 * valgrind on a loaded 2-core machine, even with `--quick`), for the relay's figures alone.
 */
export const outboxCase: BenchCase = {
  id: 18,
  title: 'Outbox',
  async run(context): Promise<CaseReport> {
    const relaySettings = context.settings.quick ? QUICK_RELAY : FULL_RELAY;
    const { callgrind, how, report } = await openInstructionCase(context, { platform: 'express', relay: relaySettings });
    const broker = await openBenchBroker().catch(() => undefined);
    if (!broker) {
      await callgrind.close();
      throw new CaseSkipped(`RabbitMQ is not reachable at ${RABBITMQ_URL}`);
    }
    try {
      if (process.env.BENCH_OUTBOX_RELAY_ONLY === '1') {
        report.rows.push({ variant: 'instructions per message: not measured (BENCH_OUTBOX_RELAY_ONLY=1)' });
      } else {
        const counts = await inParallel(ARMS, PARALLEL_ARMS, (arm) => measureArm(context, how, callgrind, `outbox ${arm}`, (launch) => outboxArm(context, how, broker, arm, launch)));
        const arms = Object.fromEntries(ARMS.map((arm, i) => [arm, counts[i]])) as Record<OutboxArm, ArmInstructions>;
        report.details.arms = arms;
        reportInstructions(report, arms);
      }
      const rates = [];
      for (const rate of relaySettings.rates) {
        rates.push(await measureRate(context, broker, rate, relaySettings));
      }
      report.details.rates = rates;
      const drain = await measureDrain(context, broker, relaySettings.backlog);
      report.details.drain = drain;
      reportRelay(report, rates, drain);
    } finally {
      await callgrind.close();
      await broker.close();
    }
    return report;
  },
};

/**
 * A table and a queue of this run for one process (`c18_<what>_<time>`, `bench-<table>`): the table
 * made by the package's own migration SQL, a consumer in the runner stamping each arrival on the
 * queue, and how to remove them all. The consumer also keeps the queue in use: the broker deletes
 * a run's queue after 10 minutes without one (x-expires), and an arm under valgrind outlasts that;
 * its mandatory publishes then came back unroutable, and the relay dead-lettered them (a full run on 2026-12-05).
 */
async function openOutboxRun({ database }: BenchContext, broker: BenchBroker, what: string) {
  const table = `c18_${what.replace(/-/g, '_')}_${Date.now().toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
  const queue = `bench-${table}`;
  const outbox = (await schemaSql(undefined, table)).find(({ name }) => name.endsWith('create-outbox-messages-table'));
  if (!outbox) {
    throw new Error('schemaSql() has no outbox migration');
  }
  await database.query(outbox.sql);
  await broker.declareQueue(queue);
  const consumer = await consumeArrivals(broker.url, queue);
  return {
    table,
    queue,
    consumer,
    config: (relay: boolean): OutboxBenchConfig => ({ databaseUrl: database.url, rabbitmqUrl: broker.url, queue, table, relay }),
    close: async () => {
      await consumer.close();
      await broker.deleteQueue(queue);
      await database.query(`DROP TABLE "${table}"`);
    },
  };
}

/** Waits until every message of `table` is dispatched; fails at once on a dead-lettered one, and after `DRAIN_TIMEOUT_MS`. */
async function waitDispatched(context: BenchContext, table: string): Promise<void> {
  await until(
    async () => {
      const [{ pending, dead }] = await context.database.query<{ pending: number; dead: number }>(
        `SELECT count(*) FILTER (WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL)::int AS pending, count(*) FILTER (WHERE dead_lettered_at IS NOT NULL)::int AS dead FROM "${table}"`,
      );
      if (dead > 0) {
        throw new Error(`${dead} messages of ${table} were dead-lettered`);
      }
      return pending === 0;
    },
    `every message of ${table} is dispatched`,
    DRAIN_TIMEOUT_MS,
  );
}

/** One arm in a process (and, for `outbox-request`, a relay process) of its own, on a table and a queue of its own. */
async function outboxArm(context: BenchContext, how: InstructionWindows, broker: BenchBroker, arm: OutboxArm, launch: ProcessLaunch): Promise<RunningArm> {
  const run = await openOutboxRun(context, broker, `${arm}_${launch.wrapper ? 'counted' : 'native'}`);
  const apps: HttpBenchProcess[] = [];
  const stop = async () => {
    await Promise.all(apps.map((process) => process.stop()));
    await run.close();
  };
  try {
    const app = await startOutboxBenchApp(run.config(arm === 'outbox'), context.runtimes.headline, launch);
    apps.push(app);
    if (arm === 'outbox-request') {
      apps.push(await startOutboxBenchApp(run.config(true), context.runtimes.headline));
    }
    const http = await runningHttpArm(app, how, { path: ROUTES[arm], label: run.table });
    return {
      ...http,
      send: async (requests) => {
        await http.send(requests);
        if (arm === 'outbox') {
          // The relay's work for the window's messages belongs to the window.
          await waitDispatched(context, run.table);
        }
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The instructions of the arms, each above the baseline, as rows and a chart group. */
function reportInstructions(report: CaseReport, arms: Record<OutboxArm, ArmInstructions>): void {
  const baseline = arms.baseline;
  const trips = (arm: ArmInstructions) => (arm.roundTrips === undefined ? '' : `; ${arm.roundTrips} round trips/msg`);
  const added: Record<string, number> = {};
  for (const arm of ARMS) {
    const counted = arms[arm];
    added[arm] = counted.median - baseline.median;
    report.rows.push({
      variant: `Express, ${ARM_NAMES[arm]}`,
      appCpuMicros: counted.cpuMicros,
      figure: armFigure(counted, arm === 'baseline' ? undefined : baseline, 'baseline') + trips(counted),
    });
  }
  report.details.addedOverBaseline = Object.fromEntries(ARMS.filter((arm) => arm !== 'baseline').map((arm) => [arm, { instructions: added[arm], halfSpread: addedHalfSpread(arms[arm], baseline), cpuMicros: arms[arm].cpuMicros - baseline.cpuMicros }]));
  report.chart.push({
    title: '18 · instructions per message · outbox against a direct publish',
    unit: 'k instructions',
    bars: ARMS.map((arm, i) => ({ label: arm, value: arms[arm].median / 1000, series: i === 0 ? 0 : i })),
    note: ARMS.filter((arm) => arm !== 'baseline')
      .map((arm) => `${arm} ${signedThousands(added[arm])}`)
      .join(', ') + ' over baseline',
  });
}

/** What the relay did at one steady rate. */
interface RateResult {
  readonly rate: number;
  readonly seconds: number;
  /** The producer's achieved rate (answers over the load's time) and its latencies (ms). */
  readonly produced: { readonly throughput: number; readonly p50: number; readonly p99: number };
  readonly messages: number;
  /** Messages over the time from the first arrival at the consumer to the last. */
  readonly relayedPerSecond: number;
  /** From the row's `created_at` (the claim's transaction began) to the arrival at the consumer, ms. */
  readonly lagMs: { readonly p50: number; readonly p95: number; readonly p99: number; readonly max: number };
  /**
   * From the producer's reading of the request's whole answer to the arrival, ms: the claim
   * committed before its answer left, so this is a lower bound of the lag from the COMMIT (negative
   * where the message arrived before the runner had read the answer), as `lagMs` is an upper bound.
   */
  readonly lagFromAnswerMs: { readonly p50: number; readonly p95: number; readonly max: number };
  /** From `created_at` to `dispatched_at` (the statement that marked its batch, after the confirmations), ms. */
  readonly takenLagMs: { readonly p50: number; readonly p95: number; readonly max: number };
  readonly batches: BatchSizes;
  /** The app's CPU time (user + system) per message, relaying included. */
  readonly appCpuMicros: number;
}

interface BatchSizes {
  readonly count: number;
  readonly mean: number;
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
  /** Batches by size: `1`, `2-9`, `10-49`, `50-99`, `100` (full). */
  readonly histogram: Record<string, number>;
}

/** The rows of `table` created from `since` (epoch ms) on: id, created_at, dispatched_at (epoch ms). */
async function outboxRows(context: BenchContext, table: string, since = 0) {
  return context.database.query<{ id: string; created: number; dispatched: number }>(
    `SELECT id, extract(epoch FROM created_at) * 1000 AS created, extract(epoch FROM dispatched_at) * 1000 AS dispatched FROM "${table}" ` +
      `WHERE created_at >= to_timestamp($1::float8 / 1000) ORDER BY seq`,
    [since],
  );
}

function batchSizes(rows: readonly { dispatched: number }[]): BatchSizes {
  const byBatch = new Map<number, number>();
  for (const { dispatched } of rows) {
    byBatch.set(Number(dispatched), (byBatch.get(Number(dispatched)) ?? 0) + 1);
  }
  const sizes = [...byBatch.values()];
  const bucket = (size: number) => (size === 1 ? '1' : size < 10 ? '2-9' : size < 50 ? '10-49' : size < 100 ? '50-99' : '100+');
  const histogram: Record<string, number> = { '1': 0, '2-9': 0, '10-49': 0, '50-99': 0, '100+': 0 };
  sizes.forEach((size) => (histogram[bucket(size)] = (histogram[bucket(size)] ?? 0) + 1));
  return {
    count: sizes.length,
    mean: round(rows.length / Math.max(1, sizes.length), 1),
    p50: percentile(sizes, 50),
    p95: percentile(sizes, 95),
    max: Math.max(...sizes),
    histogram,
  };
}

/** One native app with its relay, loaded at `rate` for `seconds` after a warm-up; the consumer stamps each message's arrival. */
async function measureRate(context: BenchContext, broker: BenchBroker, rate: number, settings: typeof FULL_RELAY): Promise<RateResult> {
  const run = await openOutboxRun(context, broker, `rate${rate}`);
  const { table: name, consumer } = run;
  const app = await startOutboxBenchApp(run.config(true), context.runtimes.headline);
  try {
    const url = `${app.baseUrl}/outbox/credits`;
    await runHttpLoad({ url, connections: 4, amount: settings.warmup, timeout: REQUEST_TIMEOUT_SECONDS, request: uniqueCredits(`${name}-warmup`) });
    await waitDispatched(context, name);
    await context.database.settle();
    const since = Date.now();
    const before = await app.usage();
    const answered = new Map<string, number>();
    const request = uniqueCredits(name);
    const produced = await runFixedRateLoad({
      url,
      rate,
      seconds: settings.seconds,
      connections: PRODUCER_CONNECTIONS,
      request,
      onAnswer: (n, answeredAt) => answered.set(request(n).key, answeredAt),
    });
    await waitDispatched(context, name);
    const rows = await outboxRows(context, name, since);
    if (rows.some(({ id }) => !answered.has(id))) {
      throw new Error(`messages of ${name} whose id is no key the load sent: the outbox route's message id must be the request's Idempotency-Key`);
    }
    await consumer.waitFor(rows.map(({ id }) => id));
    const cpu = (await app.usage()).cpuMicros - before.cpuMicros;
    const arrived = rows.map(({ id }) => consumer.arrivals.get(id) as number);
    const lags = rows.map(({ created }, i) => arrived[i] - Number(created));
    const fromAnswer = rows.map(({ id }, i) => arrived[i] - (answered.get(id) as number));
    const taken = rows.map(({ created, dispatched }) => Number(dispatched) - Number(created));
    const span = (Math.max(...arrived) - Math.min(...arrived)) / 1000;
    const result: RateResult = {
      rate,
      seconds: settings.seconds,
      produced: { throughput: round(produced.throughput, 1), p50: round(produced.p50 ?? Number.NaN, 2), p99: round(produced.p99 ?? Number.NaN, 2) },
      messages: rows.length,
      relayedPerSecond: round(rows.length / span, 1),
      lagMs: { p50: round(percentile(lags, 50), 1), p95: round(percentile(lags, 95), 1), p99: round(percentile(lags, 99), 1), max: round(Math.max(...lags), 1) },
      lagFromAnswerMs: { p50: round(percentile(fromAnswer, 50), 1), p95: round(percentile(fromAnswer, 95), 1), max: round(Math.max(...fromAnswer), 1) },
      takenLagMs: { p50: round(percentile(taken, 50), 1), p95: round(percentile(taken, 95), 1), max: round(Math.max(...taken), 1) },
      batches: batchSizes(rows),
      appCpuMicros: Math.round(cpu / rows.length),
    };
    context.log(
      `outbox at ${rate}/s: produced ${result.produced.throughput}/s, relayed ${result.relayedPerSecond}/s, lag p50 ${result.lagMs.p50} ms p95 ${result.lagMs.p95} ms max ${result.lagMs.max} ms ` +
        `(from the answer: p50 ${result.lagFromAnswerMs.p50} ms p95 ${result.lagFromAnswerMs.p95} ms max ${result.lagFromAnswerMs.max} ms), ` +
        `${result.batches.count} batches (mean ${result.batches.mean}, max ${result.batches.max}), ${result.appCpuMicros} µs/msg`,
    );
    return result;
  } finally {
    await app.stop();
    await run.close();
  }
}

/** A backlog drained by one relay. */
interface DrainResult {
  readonly messages: number;
  /** Messages over the time from the first arrival at the consumer to the last. */
  readonly perSecond: number;
  /** Messages over the time from the relay process's start (fork) to the last arrival: start-up included. */
  readonly perSecondFromStart: number;
  /** From the first batch's `dispatched_at` to the last's, s. */
  readonly dispatchedSpanSeconds: number;
  readonly batches: BatchSizes;
}

/**
 * `messages` rows written straight into a fresh outbox table, as `Outbox.publish()` writes them (a
 * random id, the queue, `credit.granted`, a credit as JSON), with no relay anywhere; then one app
 * process with its relay started on the table, the consumer stamping arrivals.
 */
async function measureDrain(context: BenchContext, broker: BenchBroker, messages: number): Promise<DrainResult> {
  const run = await openOutboxRun(context, broker, 'drain');
  const { table: name, queue, consumer } = run;
  await context.database.query(
    `INSERT INTO "${name}" (id, destination, address, pattern, headers, payload) ` +
      `SELECT gen_random_uuid()::text, 'rabbitmq', $1, 'credit.granted', '{}', json_build_object('account', 'a' || (n % 1000), 'cents', 1 + n % 100)::text ` +
      `FROM generate_series(0, $2::int - 1) AS n`,
    [queue, messages],
  );
  await context.database.settle();
  const started = performance.timeOrigin + performance.now();
  const app = await startOutboxBenchApp(run.config(true), context.runtimes.headline);
  try {
    await waitDispatched(context, name);
    const rows = await outboxRows(context, name);
    await consumer.waitFor(rows.map(({ id }) => id));
    const arrived = rows.map(({ id }) => consumer.arrivals.get(id) as number);
    const dispatched = rows.map(({ dispatched }) => Number(dispatched));
    const last = Math.max(...arrived);
    const result: DrainResult = {
      messages: rows.length,
      perSecond: round((rows.length * 1000) / (last - Math.min(...arrived)), 1),
      perSecondFromStart: round((rows.length * 1000) / (last - started), 1),
      dispatchedSpanSeconds: round((Math.max(...dispatched) - Math.min(...dispatched)) / 1000, 2),
      batches: batchSizes(rows),
    };
    context.log(`outbox backlog of ${messages}: drained at ${result.perSecond}/s (${result.perSecondFromStart}/s from the relay's start), ${result.batches.count} batches`);
    return result;
  } finally {
    await app.stop();
    await run.close();
  }
}

function reportRelay(report: CaseReport, rates: readonly RateResult[], drain: DrainResult): void {
  for (const result of rates) {
    report.rows.push({
      variant: `relay at ${result.rate}/s for ${result.seconds} s`,
      throughput: result.relayedPerSecond,
      appCpuMicros: result.appCpuMicros,
      figure:
        `produced ${result.produced.throughput}/s${result.produced.throughput < RATE_HELD * result.rate ? ' (RATE NOT HELD)' : ''}; lag created → consumer p50 ${result.lagMs.p50} ms, p95 ${result.lagMs.p95} ms, max ${result.lagMs.max} ms; ` +
        `from the answer p50 ${result.lagFromAnswerMs.p50} ms, p95 ${result.lagFromAnswerMs.p95} ms; batches ${result.batches.count} (mean ${result.batches.mean}, p50 ${result.batches.p50}, max ${result.batches.max})`,
    });
  }
  report.rows.push({
    variant: `relay draining a backlog of ${drain.messages}`,
    throughput: drain.perSecond,
    figure: `${drain.perSecondFromStart}/s from the relay's start; ${drain.batches.count} batches (mean ${drain.batches.mean}, max ${drain.batches.max})`,
  });
  report.chart.push({
    title: '18 · outbox relay · messages per second',
    unit: 'messages/s',
    bars: [...rates.map((result) => ({ label: `at ${result.rate}/s`, value: result.relayedPerSecond, series: 1 })), { label: 'backlog', value: drain.perSecond, series: 1 }],
    note: rates.map((result) => `lag p95 at ${result.rate}/s: ${result.lagMs.p95} ms`).join(', ') + `; backlog drained in batches of ${drain.batches.p50} (p50)`,
  });
}
