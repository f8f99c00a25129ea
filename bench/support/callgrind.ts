import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** How many requests (or messages) the case sends to each arm; `--quick` sends fewer. */
export interface InstructionWindows {
  /** Concurrent HTTP connections: few and fixed, so that a count is per request, not per batch. */
  readonly connections: number;
  /** Requests sent first, uninstrumented and not counted: the app's code compiled and its pools filled. */
  readonly preWarmup: number;
  /** Requests per warm-up window; warm-up windows run until two in a row agree within `settledWithin`. */
  readonly warmupWindow: number;
  readonly settledWithin: number;
  readonly maxWarmupWindows: number;
  /** Measured windows per arm, and requests per window. */
  readonly windows: number;
  readonly window: number;
}

/**
 * valgrind's callgrind for counting the instructions a process executes in a window: the process
 * runs under `wrapper`, uninstrumented (some 5 times as fast as instrumented) until `instrument()`,
 * and `count()` zeroes its counters (`callgrind_control -z`), runs the window, dumps them
 * (`callgrind_control -d`) and reads the dump's total.
 */
export interface Callgrind {
  /** `valgrind --version`, for the results. */
  readonly version: string;
  /** The command and its arguments that go before the program to count. */
  readonly wrapper: readonly string[];
  /** Switches instrumentation on in process `pid`, started under `wrapper`: from now on it can count. */
  instrument(pid: number): Promise<void>;
  /** Runs `window` in process `pid` (instrumented) and counts the instructions it executed there. */
  count<T>(pid: number, window: () => Promise<T>): Promise<{ instructions: number; result: T }>;
  /** Removes the dumps' folder. */
  close(): Promise<void>;
}

/** callgrind with its dumps in a temporary folder; undefined when valgrind or callgrind_control is not installed. */
export async function openCallgrind(): Promise<Callgrind | undefined> {
  const version = await run('valgrind', ['--version']).then(
    ({ stdout }) => stdout.trim(),
    () => undefined,
  );
  const control = await run('callgrind_control', ['--version']).then(
    () => true,
    () => false,
  );
  if (!version || !control) {
    return undefined;
  }
  const dir = await mkdtemp(join(tmpdir(), 'bench-callgrind-'));
  return {
    version,
    // Only user-space instructions are counted (valgrind sees no kernel). The dump at exit is not read.
    wrapper: ['valgrind', '--tool=callgrind', '--quiet', '--instr-atstart=no', `--callgrind-out-file=${join(dir, 'callgrind.out.%p')}`],
    instrument: (pid) => callgrindControl(['-i', 'on'], pid),
    count: async (pid, window) => {
      await callgrindControl(['-z'], pid);
      const result = await window();
      await callgrindControl(['-d'], pid);
      const dumps = await readDumps(dir, pid);
      return { instructions: dumps.at(-1) as number, result };
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Sends `callgrind_control` its `command` for `pid`; it exits 0 even when it found no such process, so its output is read. */
async function callgrindControl(command: string[], pid: number): Promise<void> {
  const { stdout, stderr } = await run('callgrind_control', [...command, String(pid)]);
  if (!/OK\./.test(stdout)) {
    throw new Error(`callgrind_control ${command.join(' ')} ${pid} failed: ${stdout}${stderr}`);
  }
}

/**
 * The instructions (`summary:` of the `Ir` event) of each of `pid`'s numbered dumps in `dir`, in
 * the order they were written (the dump at exit, unnumbered, is not read); deletes them.
 */
export async function readDumps(dir: string, pid: number): Promise<number[]> {
  const prefix = `callgrind.out.${pid}.`;
  const dumps = (await readdir(dir)).filter((name) => name.startsWith(prefix)).sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)));
  if (dumps.length === 0) {
    throw new Error(`callgrind wrote no dump for process ${pid} in ${dir}`);
  }
  const summaries = [];
  for (const name of dumps) {
    const summary = /^summary: (\d+)/m.exec(await readFile(join(dir, name), 'utf8'));
    if (!summary) {
      throw new Error(`${name} has no summary line`);
    }
    summaries.push(Number(summary[1]));
    await rm(join(dir, name));
  }
  return summaries;
}
