import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { PurgeRun } from 'nestjs-idempotent-consumer';
import type { HealthTiming } from '../apps/bench/bench.controller.js';
import type { ConsumerCommand, ConsumerReply } from '../apps/bench/consumer-commands.js';
import type { BenchLayer } from '../apps/bench/layer-bench.module.js';
import type { OutboxBenchConfig } from '../apps/bench/outbox-bench.module.js';
import type { ProcessorArm } from '../apps/bench/bench-processors.js';
import type { ProcessorCommand, ProcessorReply } from '../apps/bench/processor.main.js';
import type { ProcessUsage } from '../apps/bench/process-usage.js';
import { REDIS_RUN_ENV } from './broker-clients.js';

/** The HTTP platforms the bench app runs on. */
export type Platform = 'express' | 'fastify';
export const PLATFORMS: readonly Platform[] = ['express', 'fastify'];

/** The compiled entry of a bench process, `test/apps/bench/<file>`, from this file's place in `dist/test/support/`. */
const entry = (file: string) => fileURLToPath(new URL(`../apps/bench/${file}`, import.meta.url));

/** A Node.js binary that a bench process runs on, and what the logs call it: `Node 24`. */
export interface NodeBinary {
  readonly name: string;
  readonly execPath: string;
}

/**
 * How to start a bench process other than as plain `node <entry>`: under a tool (`wrapper`, the
 * command and its arguments before the Node binary: valgrind), with Node options of its own.
 */
export interface ProcessLaunch {
  readonly wrapper?: readonly string[];
  readonly nodeArgs?: readonly string[];
}

/** A bench process forked by the runner, once it has said it is ready. */
interface ForkedBenchProcess<Ready> {
  readonly child: ChildProcess;
  /** The first IPC message the process sent: it is ready, and how to reach it. */
  readonly ready: Ready;
  /** What the process has printed so far, for error messages. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Forks the bench process `entry` (named `name` in errors) on `runtime` with `env` added to the
 * runner's, and waits for its first IPC message; every bench process is given the run's Redis lease store. It is started with `--expose-gc` for the memory readings; only
 * those call the collector. `launch` runs it under a tool and adds Node options; so does
 * `BENCH_APP_NODE_ARGS`, for looking into a figure: `BENCH_APP_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof'`.
 */
async function forkBenchProcess<Ready>(
  name: string,
  entry: string,
  runtime: NodeBinary,
  env: Record<string, string>,
  { wrapper = [], nodeArgs = [] }: ProcessLaunch = {},
): Promise<ForkedBenchProcess<Ready>> {
  const node = ['--expose-gc', ...nodeArgs, ...(process.env.BENCH_APP_NODE_ARGS?.split(' ').filter(Boolean) ?? [])];
  const child = fork(entry, [], {
    // Under a wrapper, fork() runs the wrapper with its arguments, then the Node binary and its options.
    execPath: wrapper.length > 0 ? wrapper[0] : runtime.execPath,
    // Under a tool the process runs tens of times slower: BENCH_UNDER_TOOL gives its waits room (bench-app.module.ts).
    env: { ...process.env, ...REDIS_RUN_ENV, ...env, ...(wrapper.length > 0 ? { BENCH_UNDER_TOOL: '1' } : {}) },
    execArgv: wrapper.length > 0 ? [...wrapper.slice(1), runtime.execPath, ...node] : node,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const ready = await new Promise<Ready>((done, fail) => {
    child.once('message', (message: Ready) => done(message));
    child.once('exit', (code) => fail(new Error(`${name} exited with ${code} before it was ready:\n${output}`)));
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
    }
    await exited;
  };
  return { child, ready, output: () => output, stop };
}

/** The JSON a bench app answers at `url`; an error when it answers anything but a 2xx. */
async function answer<T>(url: string, method = 'GET'): Promise<T> {
  const response = await fetch(url, { method });
  if (!response.ok) {
    throw new Error(`${method} ${url} answered ${response.status}: ${await response.text()}`);
  }
  return (await response.json()) as T;
}

/** A bench app serving the credit routes over HTTP in a child process. */
export interface HttpBenchProcess {
  /** Its process id (that of the tool it runs under, which is the same process). */
  readonly pid: number;
  readonly baseUrl: string;
  /** The process's CPU time and memory so far; with `gc`, the memory after a full garbage collection. */
  usage(options?: { gc: boolean }): Promise<ProcessUsage>;
  /** The queries the process has sent to PostgreSQL so far, where it counts them (`GET /round-trips`). */
  roundTrips?(): Promise<number>;
  stop(): Promise<void>;
}

/** Forks the HTTP bench app `file` and reaches it at the port it reports; `countsRoundTrips` where it serves `GET /round-trips`. */
async function startHttpProcess(name: string, file: string, runtime: NodeBinary, env: Record<string, string>, launch: ProcessLaunch, countsRoundTrips: boolean): Promise<HttpBenchProcess> {
  const app = await forkBenchProcess<{ port: number }>(`${name} on ${runtime.name}`, entry(file), runtime, env, launch);
  const baseUrl = `http://127.0.0.1:${app.ready.port}`;
  const roundTrips = async () => (await answer<{ roundTrips: number }>(`${baseUrl}/round-trips`)).roundTrips;
  return {
    pid: app.child.pid as number,
    baseUrl,
    usage: (options) => answer<ProcessUsage>(`${baseUrl}/usage?gc=${options?.gc === true}`),
    ...(countsRoundTrips ? { roundTrips } : {}),
    stop: app.stop,
  };
}

/** Module options of production the bench app can be started with (case 11); both off by default. */
export interface BenchAppOptions {
  /** The module's `encryption`: every recorded response sealed with AES-256-GCM. */
  readonly encryption?: boolean;
  /** An OpenTelemetry SDK tracer provider registered in the app, its spans exported to nothing. */
  readonly tracing?: boolean;
}

/** The bench app (`test/apps/bench/main.ts`) running as a child process, on one platform. */
export interface BenchAppProcess extends HttpBenchProcess {
  /** Runs one purge of every expired id in the app (`purgeNow()`) and says what it did. */
  purge(): Promise<Omit<PurgeRun, 'startedAt'>>;
  /** One check of the idempotency health indicator, timed in the app. */
  health(): Promise<HealthTiming>;
}

/**
 * Starts the bench app on `platform` in a process of its own on `runtime`, so the load generator
 * (this process) and the app do not share an event loop; `options` switch on encryption and tracing,
 * `launch` starts it under a tool.
 */
export async function startBenchApp(platform: Platform, databaseUrl: string, runtime: NodeBinary, options: BenchAppOptions = {}, launch: ProcessLaunch = {}): Promise<BenchAppProcess> {
  const env = { BENCH_DATABASE_URL: databaseUrl, BENCH_PLATFORM: platform, BENCH_ENCRYPTION: options.encryption ? '1' : '0', BENCH_TRACING: options.tracing ? '1' : '0' };
  const app = await startHttpProcess(`the bench app (${platform})`, 'main.js', runtime, env, launch, false);
  return {
    ...app,
    purge: () => answer<PurgeRun>(`${app.baseUrl}/purge`, 'POST'),
    health: () => answer<HealthTiming>(`${app.baseUrl}/health`),
  };
}

/**
 * Starts the bench app of one data layer (`test/apps/bench/layer-bench.main.ts`) on `runtime`, on
 * the database at `databaseUrl` (which holds the store and `layer_credits`); `launch` starts it under a tool.
 */
export function startLayerBenchApp(layer: BenchLayer, databaseUrl: string, runtime: NodeBinary, launch: ProcessLaunch = {}): Promise<HttpBenchProcess> {
  return startHttpProcess(`the ${layer} bench app`, 'layer-bench.main.js', runtime, { BENCH_DATABASE_URL: databaseUrl, BENCH_LAYER: layer }, launch, true);
}

/** Starts the outbox bench app (`test/apps/bench/outbox-bench.main.ts`) on `runtime`; `launch` starts it under a tool. */
export function startOutboxBenchApp(config: OutboxBenchConfig, runtime: NodeBinary, launch: ProcessLaunch = {}): Promise<HttpBenchProcess> {
  const env = {
    BENCH_DATABASE_URL: config.databaseUrl,
    BENCH_RABBITMQ_URL: config.rabbitmqUrl,
    BENCH_OUTBOX_QUEUE: config.queue,
    BENCH_OUTBOX_TABLE: config.table,
    BENCH_OUTBOX_RELAY: config.relay ? '1' : '0',
  };
  return startHttpProcess(`the outbox bench app (${config.relay ? 'with' : 'without'} its relay)`, 'outbox-bench.main.js', runtime, env, launch, true);
}

/** The bench app running as a message consumer in a child process, told over IPC which queue to consume. */
export interface BenchConsumerProcess {
  /** Its process id (that of the tool it runs under, which is the same process). */
  readonly pid: number;
  /** Starts consuming `queue`; resolves once it is on it, with its CPU time (µs) from before it connected. */
  consume(queue: string): Promise<number>;
  /** Stops consuming (unacked deliveries go back to the queue); resolves with its CPU time (µs) from before it stopped. */
  pause(): Promise<number>;
  /** Runs a full garbage collection; resolves with its CPU time (µs) after it. */
  collect(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Starts `test/apps/bench/consumer.main.ts` as the consumer `consumer` (a key of its CONSUMERS,
 * `rabbitmq` serving every variant's pattern) on `runtime`, with `env` added to the runner's: the
 * bench database, the variant, the broker's settings. It consumes nothing until asked to; `launch`
 * starts it under a tool, and `BENCH_APP_NODE_ARGS` applies to it too.
 */
export async function startConsumerProcess(consumer: string, runtime: NodeBinary, env: Record<string, string>, launch: ProcessLaunch = {}): Promise<BenchConsumerProcess> {
  const name = `the bench ${consumer} consumer${env.BENCH_VARIANT ? ` (${env.BENCH_VARIANT})` : ''}`;
  const process = await forkBenchProcess(`${name} on ${runtime.name}`, entry('consumer.main.js'), runtime, { ...env, BENCH_CONSUMER: consumer }, launch);
  const ask = (command: ConsumerCommand) =>
    new Promise<number>((done, fail) => {
      const exited = (code: number | null) => fail(new Error(`${name} exited with ${code}:\n${process.output()}`));
      process.child.once('exit', exited);
      process.child.once('message', (reply: ConsumerReply) => {
        process.child.off('exit', exited);
        if ('error' in reply) {
          fail(new Error(`${name} could not ${Object.keys(command)[0]}: ${reply.error}`));
        } else {
          done(reply.cpuMicros);
        }
      });
      process.child.send(command);
    });
  return {
    pid: process.child.pid as number,
    consume: (queue) => ask({ consume: queue }),
    pause: () => ask({ pause: true }),
    collect: () => ask({ collect: true }),
    stop: process.stop,
  };
}

/**
 * Starts the bench app as BullMQ workers (`test/apps/bench/processor.main.ts`) in a process of its
 * own on `runtime`, with `env` added to the runner's; `run` and `pause` an arm's worker resolve
 * with the process's CPU time (µs) from before.
 */
export async function startProcessorProcess(runtime: NodeBinary, env: Record<string, string>) {
  const processor = await forkBenchProcess(`the bench processor on ${runtime.name}`, entry('processor.main.js'), runtime, env);
  const ask = (command: ProcessorCommand) =>
    new Promise<number>((done, fail) => {
      processor.child.once('message', (reply: ProcessorReply) => ('error' in reply ? fail(new Error(reply.error)) : done(reply.cpuMicros)));
      processor.child.send(command);
    });
  return { run: (arm: ProcessorArm) => ask({ run: arm }), pause: (arm: ProcessorArm) => ask({ pause: arm }), stop: processor.stop };
}
