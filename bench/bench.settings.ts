import type { BenchSettings } from './cases/bench-case.js';
import type { RuntimeChoice } from './support/bench-runtime.js';

/**
 * The published method: 3 rounds of 6 s per arm, 20 connections, RSS at 20,000 and 200,000,
 * 20,000 RabbitMQ messages per arm.
 */
const FULL: BenchSettings = {
  rounds: 3,
  roundSeconds: 6,
  warmupSeconds: 3,
  connections: 20,
  memoryCheckpoints: [20_000, 200_000],
  consumerMessages: 20_000,
  quick: false,
};

/** A trial of the harness in about two minutes; its figures are not comparable to a full run's. */
const QUICK: BenchSettings = {
  ...FULL,
  rounds: 2,
  roundSeconds: 3,
  warmupSeconds: 1,
  memoryCheckpoints: [2_000, 20_000],
  consumerMessages: 6_000,
  quick: true,
};

/** What `npm run bench -- [--quick] [--cases=1,3] [--node=24|20]` asks for. */
export interface BenchRequest {
  settings: BenchSettings;
  /** The case numbers to run; undefined for all. */
  cases: number[] | undefined;
  /** The Node the app processes of every case run on; case 1 also runs on the other one. */
  node: RuntimeChoice;
}

export function parseArguments(args: string[]): BenchRequest {
  let settings = FULL;
  let cases: number[] | undefined;
  let node: RuntimeChoice = '24';
  for (const arg of args) {
    if (arg === '--node=24' || arg === '--node=20') {
      node = arg === '--node=24' ? '24' : '20';
    } else if (arg === '--quick') {
      settings = QUICK;
    } else if (arg.startsWith('--cases=')) {
      cases = arg
        .slice('--cases='.length)
        .split(',')
        .map((id) => Number(id));
    } else {
      throw new Error(`unknown argument '${arg}': npm run bench -- [--quick] [--cases=1,2,3,7] [--node=24|20]`);
    }
  }
  return { settings, cases, node };
}
