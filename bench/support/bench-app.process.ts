import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { PurgeRun } from 'nestjs-idempotent-consumer';
import type { HealthTiming } from '../app/bench.controller.js';
import type { ProcessUsage } from '../app/process-usage.js';
import { REDIS_ENV } from './bench-redis.js';
import type { BenchRuntime } from './bench-runtime.js';

/** The HTTP platforms the cases run on. */
export type Platform = 'express' | 'fastify';
export const PLATFORMS: readonly Platform[] = ['express', 'fastify'];

const APP_ENTRY = fileURLToPath(new URL('../app/main.js', import.meta.url));

/** Module options of production the bench app can be started with (case 11); both off by default. */
export interface BenchAppOptions {
  /** The module's `encryption`: every recorded response sealed with AES-256-GCM. */
  readonly encryption?: boolean;
  /** An OpenTelemetry SDK tracer provider registered in the app, its spans exported to nothing. */
  readonly tracing?: boolean;
}

/**
 * How to start a bench process other than as plain `node <entry>`: under a tool (`wrapper`, the
 * command and its arguments before the Node binary: valgrind), with Node options of its own.
 */
export interface ProcessLaunch {
  readonly wrapper?: readonly string[];
  readonly nodeArgs?: readonly string[];
}

/** The bench app running as a child process, on one platform. */
export interface BenchAppProcess {
  readonly platform: Platform;
  /** Its process id (that of the tool it runs under, which is the same process). */
  readonly pid: number;
  /** The Node.js it runs on. */
  readonly runtime: BenchRuntime;
  readonly baseUrl: string;
  /** The process's CPU time and memory so far; with `gc`, the memory after a full garbage collection. */
  usage(options?: { gc: boolean }): Promise<ProcessUsage>;
  /** Runs one purge of every expired id in the app (`purgeNow()`) and says what it did. */
  purge(): Promise<Omit<PurgeRun, 'startedAt'>>;
  /** One check of the idempotency health indicator, timed in the app. */
  health(): Promise<HealthTiming>;
  stop(): Promise<void>;
}

/**
 * Starts the bench app on `platform` in a process of its own on `runtime`, so the load generator
 * (this process) and the app do not share an event loop; `options` switch on encryption and tracing,
 * `launch` starts it under a tool.
 */
export async function startBenchApp(
  platform: Platform,
  databaseUrl: string,
  runtime: BenchRuntime,
  options: BenchAppOptions = {},
  launch: ProcessLaunch = {},
): Promise<BenchAppProcess> {
  const app = await forkBenchProcess<{ port: number }>(`the bench app (${platform}, ${runtime.name})`, APP_ENTRY, runtime, {
    BENCH_DATABASE_URL: databaseUrl,
    BENCH_PLATFORM: platform,
    BENCH_ENCRYPTION: options.encryption ? '1' : '0',
    BENCH_TRACING: options.tracing ? '1' : '0',
  }, launch);
  const baseUrl = `http://127.0.0.1:${app.ready.port}`;
  return {
    platform,
    pid: app.child.pid as number,
    runtime,
    baseUrl,
    usage: (options) => answer<ProcessUsage>(`${baseUrl}/usage?gc=${options?.gc === true}`),
    purge: () => answer<PurgeRun>(`${baseUrl}/purge`, 'POST'),
    health: () => answer<HealthTiming>(`${baseUrl}/health`),
    stop: app.stop,
  };
}

/** The JSON a bench app answers at `url`; an error when it answers anything but a 2xx. */
export async function answer<T>(url: string, method = 'GET'): Promise<T> {
  const response = await fetch(url, { method });
  if (!response.ok) {
    throw new Error(`${method} ${url} answered ${response.status}: ${await response.text()}`);
  }
  return (await response.json()) as T;
}

/** A bench process forked by the runner, once it has said it is ready. */
export interface ForkedBenchProcess<Ready> {
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
export async function forkBenchProcess<Ready>(
  name: string,
  entry: string,
  runtime: BenchRuntime,
  env: Record<string, string>,
  { wrapper = [], nodeArgs = [] }: ProcessLaunch = {},
): Promise<ForkedBenchProcess<Ready>> {
  const node = ['--expose-gc', ...nodeArgs, ...(process.env.BENCH_APP_NODE_ARGS?.split(' ').filter(Boolean) ?? [])];
  const child = fork(entry, [], {
    // Under a wrapper, fork() runs the wrapper with its arguments, then the Node binary and its options.
    execPath: wrapper.length > 0 ? wrapper[0] : runtime.execPath,
    // Under a tool the process runs tens of times slower: BENCH_UNDER_TOOL gives its waits room (bench-app.module.ts).
    env: { ...process.env, ...REDIS_ENV, ...env, ...(wrapper.length > 0 ? { BENCH_UNDER_TOOL: '1' } : {}) },
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
  return { child, ready, output: () => output, stop: () => stop(child, exited) };
}

async function stop(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
  }
  await exited;
}
