import { type BenchContext, type BenchSettings, type CaseReport, CaseSkipped, emptyReport } from '../cases/bench-case.js';
import type { HttpBenchProcess, ProcessLaunch } from '../../test/support/bench-processes.js';
import { type Callgrind, type InstructionWindows, openCallgrind } from './callgrind.js';
import { creditBody, runHttpLoad, uniqueCredits } from './http-load.js';
import { median, round } from './stats.js';

/** The published windows of the instruction cases (16, 17), and `--quick`'s trial of the harness. */
const FULL: InstructionWindows = { connections: 4, preWarmup: 1000, warmupWindow: 200, settledWithin: 0.03, maxWarmupWindows: 4, windows: 3, window: 200 };
const QUICK: InstructionWindows = { connections: 4, preWarmup: 300, warmupWindow: 100, settledWithin: 0.05, maxWarmupWindows: 2, windows: 3, window: 100 };

/** The windows an instruction case sends to each arm in this run. */
function instructionWindows(settings: BenchSettings): InstructionWindows {
  return settings.quick ? QUICK : FULL;
}

/**
 * Opens callgrind for an instruction case (16, 17, 18), and its report with the method in the
 * details: this run's windows, the counted processes' Node options, valgrind's and the apps'
 * Node's versions, and the case's own `method`.
 * @throws CaseSkipped where valgrind is not installed.
 */
export async function openInstructionCase(context: BenchContext, method: Record<string, unknown> = {}): Promise<{ callgrind: Callgrind; how: InstructionWindows; report: CaseReport }> {
  const callgrind = await openCallgrind();
  if (!callgrind) {
    throw new CaseSkipped('valgrind (with callgrind_control) is not installed');
  }
  const how = instructionWindows(context.settings);
  const report = emptyReport();
  report.details.method = { ...how, nodeArgs: INSTRUCTION_NODE_ARGS, valgrind: callgrind.version, runtime: context.runtimes.headline.version, ...method };
  return { callgrind, how, report };
}

/**
 * Arms measured at once, each in its own process: the counts do not depend on it, and valgrind
 * slows each process some 50 times, so a case's wall time does.
 */
export const PARALLEL_ARMS = 3;

/**
 * How long a request may take: under valgrind on a loaded machine one can take more than
 * autocannon's default 10 s, and a request autocannon gives up on is one the window did not count.
 */
export const REQUEST_TIMEOUT_SECONDS = 300;

/** Node options of every counted process: no V8 background threads, and its collector on a fixed schedule, so a count depends on the requests alone. */
export const INSTRUCTION_NODE_ARGS = ['--single-threaded', '--predictable-gc-schedule'];

/** One arm's counts, per request (or message). */
export interface ArmInstructions {
  /** Instructions per request of each warm-up window, then of each measured window. */
  readonly warmup: number[];
  readonly windows: number[];
  readonly median: number;
  readonly min: number;
  readonly max: number;
  /** (max − min) / median, in %. */
  readonly spreadPercent: number;
  /** The app's CPU time per request in the same arm run natively (no valgrind), each window and the median. */
  readonly cpuWindows: number[];
  readonly cpuMicros: number;
  /** Where the arm reads them: the bytes its process allocated on the V8 heap per request in each native window, and the median. */
  readonly allocatedWindows?: number[];
  readonly allocatedBytes?: number;
  /** Where the arm counts them: the queries its process sent per request in each native window, and the median. */
  readonly roundTripWindows?: number[];
  readonly roundTrips?: number;
}

/** An arm started in its own process: how to run one window of `requests`, its CPU time before and after, and how to stop. */
export interface RunningArm {
  readonly pid: number;
  /** Runs a full garbage collection; resolves with the process's CPU time (µs). */
  collect(): Promise<number>;
  /** Sends `requests` requests (or messages) and waits until each is answered (or its effect is in the database). */
  send(requests: number): Promise<void>;
  /** The process's CPU time (µs) now. */
  cpu(): Promise<number>;
  /** The bytes the process has allocated on the V8 heap so far, where it reads them (not under valgrind). */
  allocated?(): Promise<number | undefined>;
  /** The queries the process has sent to PostgreSQL so far, where it counts them. */
  roundTrips?(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Measures an arm twice, each in a process of its own: under callgrind (instructions per request,
 * warm-up windows until two agree), then natively with as many warm-up requests (CPU time per
 * request, and round trips per request where the arm counts them).
 */
export async function measureArm(
  { log }: BenchContext,
  how: InstructionWindows,
  callgrind: Callgrind,
  name: string,
  start: (launch: ProcessLaunch) => Promise<RunningArm>,
): Promise<ArmInstructions> {
  const started = performance.now();
  const counted = await start({ wrapper: callgrind.wrapper, nodeArgs: INSTRUCTION_NODE_ARGS });
  const warmup: number[] = [];
  const windows: number[] = [];
  try {
    await counted.send(how.preWarmup);
    await callgrind.instrument(counted.pid);
    const countWindow = async (requests: number) => {
      await counted.collect();
      const { instructions } = await callgrind.count(counted.pid, () => counted.send(requests));
      return instructions / requests;
    };
    const settled = () => warmup.length >= 2 && Math.abs(warmup.at(-1)! - warmup.at(-2)!) <= how.settledWithin * warmup.at(-2)!;
    while (!settled() && warmup.length < how.maxWarmupWindows) {
      warmup.push(await countWindow(how.warmupWindow));
    }
    for (let w = 0; w < how.windows; w++) {
      windows.push(await countWindow(how.window));
    }
  } finally {
    await counted.stop();
  }
  const countedSeconds = (performance.now() - started) / 1000;
  const native = await start({ nodeArgs: INSTRUCTION_NODE_ARGS });
  const cpuWindows: number[] = [];
  const roundTripWindows: number[] = [];
  const allocatedWindows: number[] = [];
  try {
    await native.send(how.preWarmup + warmup.length * how.warmupWindow);
    for (let w = 0; w < how.windows; w++) {
      // Read before the collection, so the reading's own request is not in the window's CPU time.
      const tripsBefore = await native.roundTrips?.();
      const before = await native.collect();
      const allocatedBefore = await native.allocated?.();
      await native.send(how.window);
      cpuWindows.push(((await native.cpu()) - before) / how.window);
      const allocatedAfter = await native.allocated?.();
      if (allocatedBefore !== undefined && allocatedAfter !== undefined) {
        allocatedWindows.push((allocatedAfter - allocatedBefore) / how.window);
      }
      const tripsAfter = await native.roundTrips?.();
      if (tripsBefore !== undefined && tripsAfter !== undefined) {
        roundTripWindows.push((tripsAfter - tripsBefore) / how.window);
      }
    }
  } finally {
    await native.stop();
  }
  const result = summarizeArm(warmup, windows, cpuWindows, roundTripWindows, allocatedWindows);
  log(
    `${name.padEnd(28)} ${thousands(result.median)} instr/req (${thousands(result.min)}–${thousands(result.max)}, ±${(result.spreadPercent / 2).toFixed(1)} %), ` +
      `warm-up ${warmup.map(thousands).join(', ')}; ${result.cpuMicros} µs/req native` +
      `${result.roundTrips === undefined ? '' : `, ${result.roundTrips} round trips/req`}` +
      `${result.allocatedBytes === undefined ? '' : `, ${kilobytes(result.allocatedBytes)} allocated/req`}; ${countedSeconds.toFixed(0)} s under valgrind`,
  );
  return result;
}

function summarizeArm(warmup: number[], windows: number[], cpuWindows: number[], roundTripWindows: number[], allocatedWindows: number[]): ArmInstructions {
  const middle = median(windows);
  return {
    warmup: warmup.map(Math.round),
    windows: windows.map(Math.round),
    median: Math.round(middle),
    min: Math.round(Math.min(...windows)),
    max: Math.round(Math.max(...windows)),
    spreadPercent: round((100 * (Math.max(...windows) - Math.min(...windows))) / middle, 1),
    cpuWindows: cpuWindows.map(Math.round),
    cpuMicros: Math.round(median(cpuWindows)),
    ...(roundTripWindows.length > 0 ? { roundTripWindows: roundTripWindows.map((trips) => round(trips, 3)), roundTrips: round(median(roundTripWindows), 3) } : {}),
    ...(allocatedWindows.length > 0 ? { allocatedWindows: allocatedWindows.map(Math.round), allocatedBytes: Math.round(median(allocatedWindows)) } : {}),
  };
}

/** `12.3 kB` */
export function kilobytes(bytes: number): string {
  return `${(bytes / 1000).toFixed(1)} kB`;
}

/** Runs `measure` on every item, at most `limit` at once; the results in the items' order. */
export async function inParallel<T, R>(items: readonly T[], limit: number, measure: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) {
      results[i] = await measure(items[i]);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

/**
 * The arm of `app`'s credit route at `path` (`/plain/credits`): each request a new key labelled
 * `label`, or with `replays` all the one key, which it processes once first.
 */
export async function runningHttpArm(app: HttpBenchProcess, how: InstructionWindows, { path, label, replays = false }: { path: string; label: string; replays?: boolean }): Promise<RunningArm> {
  const url = `${app.baseUrl}${path}`;
  const replayed = { key: `${label}-replayed`, body: creditBody(0) };
  let sent = 0;
  const send = async (requests: number) => {
    const first = sent;
    sent += requests;
    const unique = uniqueCredits(label);
    await runHttpLoad({
      url,
      connections: how.connections,
      amount: requests,
      timeout: REQUEST_TIMEOUT_SECONDS,
      request: replays ? () => replayed : (n) => unique(first + n),
    });
  };
  if (replays) {
    await runHttpLoad({ url, connections: 1, amount: 1, timeout: REQUEST_TIMEOUT_SECONDS, request: () => replayed });
  }
  const roundTrips = app.roundTrips?.bind(app);
  return {
    pid: app.pid,
    collect: async () => (await app.usage({ gc: true })).cpuMicros,
    send,
    cpu: async () => (await app.usage()).cpuMicros,
    allocated: async () => (await app.usage()).allocatedBytes,
    ...(roundTrips ? { roundTrips } : {}),
    stop: () => app.stop(),
  };
}

/** `1,234k instr (1,201k–1,250k)`: a median and its range. */
export function instructionsFigure({ median: middle, min, max }: { median: number; min: number; max: number }): string {
  return `${thousands(middle)} instr (${thousands(min)}–${thousands(max)})`;
}

/** `1,234k` */
export function thousands(value: number): string {
  return `${Math.round(value / 1000).toLocaleString('en-US')}k`;
}

/** Half of `arm`'s range plus half of `base`'s: how far the difference of their medians can move within the windows. */
export function addedHalfSpread(arm: ArmInstructions, base: ArmInstructions): number {
  return Math.round((arm.max - arm.min + base.max - base.min) / 2);
}

/** `1,234k instr (1,201k–1,250k) ±2.0 %`, and against `base` (`over` names it): `; +56k ±3k over plain, +12 µs`. */
export function armFigure(arm: ArmInstructions, base?: ArmInstructions, over = 'plain'): string {
  const own = `${instructionsFigure(arm)} ±${(arm.spreadPercent / 2).toFixed(1)} %`;
  if (!base) {
    return own;
  }
  const cpu = arm.cpuMicros - base.cpuMicros;
  return `${own}; ${signedThousands(arm.median - base.median)} ±${thousands(addedHalfSpread(arm, base))} over ${over}, ${cpu >= 0 ? '+' : '−'}${Math.abs(cpu).toLocaleString('en-US')} µs`;
}

/** `+123k`, `−45k` */
export function signedThousands(value: number): string {
  return `${value >= 0 ? '+' : '−'}${thousands(Math.abs(value))}`;
}
