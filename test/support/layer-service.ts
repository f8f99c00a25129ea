import type { DataLayerService, DataLayerStart } from 'nestjs-idempotent-consumer/testing';
import { type DemoProcess, startAppProcess } from './demo-process.js';

/**
 * The processes of one data layer's service in a suite of `dataLayerContract()`: `entry` started
 * with `env()` (read at each start: the suite's database exists only from its `beforeAll`) and
 * the contract's pool size, ready once `readinessPath` answers; each as the contract's service;
 * all killed at the suite's end.
 */
export function layerServices(entry: string, readinessPath: string, env: () => Record<string, string>) {
  const processes: DemoProcess[] = [];
  return {
    async start(options: DataLayerStart = {}): Promise<DemoProcess> {
      const started = await startAppProcess(entry, { ...env(), ...(options.poolMax === undefined ? {} : { POOL_MAX: String(options.poolMax) }) }, readinessPath);
      processes.push(started);
      return started;
    },
    asService: (started: DemoProcess): DataLayerService => ({ baseUrl: started.baseUrl, output: started.output, kill: () => started.kill('SIGKILL') }),
    killAll: () => Promise.all(processes.map((started) => started.kill('SIGKILL'))),
  };
}
