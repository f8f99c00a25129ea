import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { benchPackageDir, ensureBenchPackage } from './bench-packages.js';

/** A Node.js that the bench app processes run on. */
export interface BenchRuntime {
  /** What the table, the chart and the log call it: `Node 24`. */
  readonly name: string;
  /** The binary `fork()` runs. */
  readonly execPath: string;
  /** What that binary says its version is: `v24.21.0`. */
  readonly version: string;
  /** Where it comes from, for the results. */
  readonly source: string;
}

/** Which Node runs the app processes of every case: `--node=24` (the default) or `--node=20`. */
export type RuntimeChoice = '24' | '20';

/**
 * The runtimes of a run: the headline one runs every case's app processes; case 1 also runs on
 * the other one, beside it (none when the runner itself is on the headline runtime's major).
 */
export interface BenchRuntimes {
  readonly headline: BenchRuntime;
  readonly beside?: BenchRuntime;
}

/** Node 24 LTS from the npm `node` package in bench/runtime; its install script links the binary here. */
const NODE_24_BINARY = join('node_modules', 'node', 'bin', 'node');

/**
 * Node 24 from bench/runtime (installed by `npm ci` there when missing) and the runner's own Node
 * (the machine's, 20 here), the one `choice` names first. `--node=20` needs the runner on Node 20.
 */
export async function prepareRuntimes(choice: RuntimeChoice, log: (line: string) => void): Promise<BenchRuntimes> {
  await ensureBenchPackage('runtime', [NODE_24_BINARY], log);
  const execPath = join(benchPackageDir('runtime'), NODE_24_BINARY);
  const { stdout } = await promisify(execFile)(execPath, ['--version']);
  const node24: BenchRuntime = { name: 'Node 24', execPath, version: stdout.trim(), source: 'bench/runtime: the npm package node@24' };
  if (!node24.version.startsWith('v24.')) {
    throw new Error(`bench/runtime's Node says it is ${node24.version}, not 24`);
  }
  const runnerMajor = process.versions.node.split('.')[0];
  const runner: BenchRuntime = { name: `Node ${runnerMajor}`, execPath: process.execPath, version: process.version, source: "the runner's own Node" };
  if (choice === '24') {
    return runnerMajor === '24' ? { headline: node24 } : { headline: node24, beside: runner };
  }
  if (runnerMajor !== '20') {
    throw new Error(`--node=20 runs the apps on the runner's own Node, which is ${process.version}: run npm run bench on Node 20`);
  }
  return { headline: runner, beside: node24 };
}
