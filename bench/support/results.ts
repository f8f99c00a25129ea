import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, release, totalmem, type } from 'node:os';
import { join } from 'node:path';
import type { BenchSettings, ChartGroup, FloorCheck, TableRow } from '../cases/bench-case.js';
import type { BenchRuntime } from './bench-runtime.js';

/** What became of a case in this run. */
export type CaseStatus = 'measured' | 'failed' | 'skipped' | 'not run';

/** One case in the results file. */
export interface CaseResult {
  id: number;
  title: string;
  status: CaseStatus;
  /** Why a case was not measured: the error, the missing tool, the feature it waits for. */
  reason?: string;
  seconds?: number;
  /** The machine's 1-minute load average before and after the case: how noisy it was. */
  loadAverage?: { before: number; after: number };
  rows?: TableRow[];
  floors?: FloorCheck[];
  chart?: ChartGroup[];
  details?: Record<string, unknown>;
}

/** A Node.js the app processes ran on: `version` is what the binary they were forked with says. */
export type AppRuntime = Omit<BenchRuntime, 'execPath'>;

/** `bench/results/<date>.json`. */
export interface BenchResults {
  date: string;
  /** What was measured: the package's version and the commit of the tree (`+changes` when it had uncommitted ones), for the headline's stamp. */
  measured: Measured;
  /** A `--quick` trial of the harness, not a run to publish. */
  quick: boolean;
  command: string;
  /** `node`: the runner's Node, which runs the load generators. */
  machine: Machine;
  /** The Node every case's app processes ran on, and the one case 1 also ran on. */
  appRuntimes: { headline: AppRuntime; beside?: AppRuntime };
  database: { server: string; version: string };
  method: Omit<BenchSettings, 'quick'> & { description: string };
  cases: CaseResult[];
  totalSeconds: number;
}

/** The results as the README's table (Markdown), with the floors under it. */
export function markdownTable(results: BenchResults): string {
  const number = (value: number | undefined, digits: number) =>
    value === undefined ? '' : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  const lines = [
    `nestjs-idempotent-consumer ${results.measured.version} at ${results.measured.commit}, ${results.date}${results.quick ? ' (a --quick trial)' : ''}:`,
    '',
    '| Case | Variant | Throughput (/s) | p50 (ms) | p99 (ms) | App CPU (µs/req) | DB CPU (µs/req) | Figure |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  const floors: string[] = [];
  for (const result of results.cases) {
    const name = `${result.id}. ${result.title}`;
    if (result.status !== 'measured') {
      lines.push(`| ${name} | ${result.status}${result.reason ? `: ${result.reason.split('\n')[0]}` : ''} | | | | | | |`);
      continue;
    }
    for (const row of result.rows ?? []) {
      lines.push(
        `| ${name} | ${row.variant} | ${number(row.throughput, 0)} | ${number(row.p50, 2)} | ${number(row.p99, 2)} | ${number(row.appCpuMicros, 0)} | ${number(row.databaseCpuMicros, 0)} | ${row.figure ?? ''} |`,
      );
    }
    for (const floor of result.floors ?? []) {
      floors.push(
        `- Case ${result.id}, ${floor.label}: ${figure(floor.value, 3)}, floor ${floor.bound} ${figure(floor.floor, 2)}: ${floor.met ? 'met' : '**not met**'}`,
      );
    }
  }
  return [...lines, '', ...floors].join('\n');
}

/** A floor's figure: a rate in whole units, a ratio or a time to `digits` decimals. */
function figure(value: number, digits: number): string {
  return value >= 1000 ? value.toLocaleString('en-US', { maximumFractionDigits: 0 }) : value.toFixed(digits);
}

/** The machine a run measured on: its cores, memory, system and the runner's Node. */
export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  os: string;
  node: string;
}

/** The package's version and the checkout's commit; `unknown` outside a git checkout. */
export interface Measured {
  version: string;
  commit: string;
}

/** What this run measures: the version in `libs/idempotency/package.json` and `git describe`'s commit of the working tree. */
export function describeMeasured(): Measured {
  const { version } = JSON.parse(readFileSync(join(process.cwd(), 'libs', 'idempotency', 'package.json'), 'utf8')) as { version: string };
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['describe', '--always', '--abbrev=12', '--dirty=+changes'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    // Not a git checkout (a copy of the tree): the commit is not known here.
  }
  return { version, commit };
}

/** The machine this process runs on. */
export function describeMachine(): Machine {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${type()} ${release()}`,
    node: process.version,
  };
}
