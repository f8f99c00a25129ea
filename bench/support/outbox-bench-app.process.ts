import { fileURLToPath } from 'node:url';
import type { ProcessUsage } from '../app/process-usage.js';
import { answer, forkBenchProcess, type ProcessLaunch } from './bench-app.process.js';
import type { BenchRuntime } from './bench-runtime.js';
import type { HttpArmApp } from './instruction-arms.js';

const OUTBOX_APP_ENTRY = fileURLToPath(new URL('../app/outbox-bench.main.js', import.meta.url));

/** Where an outbox bench process writes and publishes, and whether it runs the relay. */
export interface OutboxAppSetup {
  readonly databaseUrl: string;
  readonly rabbitmqUrl: string;
  readonly queue: string;
  readonly table: string;
  readonly relay: boolean;
}

/** The outbox bench app (`bench/app/outbox-bench.main.ts`) running as a child process. */
export interface OutboxBenchAppProcess extends HttpArmApp {
  usage(options?: { gc: boolean }): Promise<ProcessUsage>;
  roundTrips(): Promise<number>;
}

/** Starts the outbox bench app in a process of its own on `runtime`; `launch` starts it under a tool. */
export async function startOutboxBenchApp(setup: OutboxAppSetup, runtime: BenchRuntime, launch: ProcessLaunch = {}): Promise<OutboxBenchAppProcess> {
  const app = await forkBenchProcess<{ port: number }>(
    `the outbox bench app (${setup.relay ? 'with' : 'without'} its relay, ${runtime.name})`,
    OUTBOX_APP_ENTRY,
    runtime,
    {
      BENCH_DATABASE_URL: setup.databaseUrl,
      BENCH_RABBITMQ_URL: setup.rabbitmqUrl,
      BENCH_OUTBOX_QUEUE: setup.queue,
      BENCH_OUTBOX_TABLE: setup.table,
      BENCH_OUTBOX_RELAY: setup.relay ? '1' : '0',
    },
    launch,
  );
  const baseUrl = `http://127.0.0.1:${app.ready.port}`;
  return {
    pid: app.child.pid as number,
    baseUrl,
    usage: (options) => answer<ProcessUsage>(`${baseUrl}/usage?gc=${options?.gc === true}`),
    roundTrips: async () => (await answer<{ roundTrips: number }>(`${baseUrl}/round-trips`)).roundTrips,
    stop: app.stop,
  };
}
