import { fileURLToPath } from 'node:url';
import type { ProcessUsage } from '../app/process-usage.js';
import type { BenchLayer } from '../app/layer-bench.module.js';
import { answer, forkBenchProcess, type ProcessLaunch } from './bench-app.process.js';
import type { BenchRuntime } from './bench-runtime.js';
import type { HttpArmApp } from './instruction-arms.js';

const LAYER_APP_ENTRY = fileURLToPath(new URL('../app/layer-bench.main.js', import.meta.url));

/** The bench app of one data layer running as a child process (`bench/app/layer-bench.main.ts`). */
export interface LayerBenchAppProcess extends HttpArmApp {
  readonly layer: BenchLayer;
  readonly baseUrl: string;
  usage(options?: { gc: boolean }): Promise<ProcessUsage>;
  /** The queries the app has sent to PostgreSQL so far (`pg.Client.prototype.query` calls). */
  roundTrips(): Promise<number>;
}

/**
 * Starts the bench app of `layer` in a process of its own on `runtime`, on the database at
 * `databaseUrl` (which holds the store and `layer_credits`); `launch` starts it under a tool.
 */
export async function startLayerBenchApp(layer: BenchLayer, databaseUrl: string, runtime: BenchRuntime, launch: ProcessLaunch = {}): Promise<LayerBenchAppProcess> {
  const app = await forkBenchProcess<{ port: number }>(`the ${layer} bench app (${runtime.name})`, LAYER_APP_ENTRY, runtime, { BENCH_DATABASE_URL: databaseUrl, BENCH_LAYER: layer }, launch);
  const baseUrl = `http://127.0.0.1:${app.ready.port}`;
  return {
    layer,
    pid: app.child.pid as number,
    baseUrl,
    usage: (options) => answer<ProcessUsage>(`${baseUrl}/usage?gc=${options?.gc === true}`),
    roundTrips: async () => (await answer<{ roundTrips: number }>(`${baseUrl}/round-trips`)).roundTrips,
    stop: app.stop,
  };
}
