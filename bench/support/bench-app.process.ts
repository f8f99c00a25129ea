import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { PurgeRun } from '@app/idempotency';
import type { HealthTiming, ProcessUsage } from '../app/bench.controller.js';

/** The HTTP platforms the cases run on. */
export type Platform = 'express' | 'fastify';
export const PLATFORMS: readonly Platform[] = ['express', 'fastify'];

const APP_ENTRY = fileURLToPath(new URL('../app/main.js', import.meta.url));

/** The bench app running as a child process, on one platform. */
export interface BenchAppProcess {
  readonly platform: Platform;
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
 * Starts the bench app on `platform` in a process of its own, so the load generator (this
 * process) and the app do not share an event loop. It is started with `--expose-gc` for the
 * memory readings; only those call the collector. `BENCH_APP_NODE_ARGS` adds Node options, for
 * looking into a figure: `BENCH_APP_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof'`.
 */
export async function startBenchApp(platform: Platform, databaseUrl: string): Promise<BenchAppProcess> {
  const child = fork(APP_ENTRY, [], {
    env: { ...process.env, BENCH_DATABASE_URL: databaseUrl, BENCH_PLATFORM: platform },
    execArgv: ['--expose-gc', ...(process.env.BENCH_APP_NODE_ARGS?.split(' ').filter(Boolean) ?? [])],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const port = await new Promise<number>((done, fail) => {
    child.once('message', (message: { port: number }) => done(message.port));
    child.once('exit', (code) => fail(new Error(`the bench app (${platform}) exited with ${code} before listening:\n${output}`)));
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    platform,
    baseUrl,
    usage: (options) => answer<ProcessUsage>(`${baseUrl}/usage?gc=${options?.gc === true}`),
    purge: () => answer<PurgeRun>(`${baseUrl}/purge`, 'POST'),
    health: () => answer<HealthTiming>(`${baseUrl}/health`),
    stop: () => stop(child, exited),
  };
}

/** The JSON the app answers; an error when it answers anything but a 2xx. */
async function answer<T>(url: string, method = 'GET'): Promise<T> {
  const response = await fetch(url, { method });
  if (!response.ok) {
    throw new Error(`${method} ${url} answered ${response.status}: ${await response.text()}`);
  }
  return (await response.json()) as T;
}

async function stop(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
  }
  await exited;
}
