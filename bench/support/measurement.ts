import type { BenchDatabase } from '../../test/support/bench-database.js';
import type { BenchContext, BenchSettings } from '../cases/bench-case.js';
import { startCpuReading, startServerCpuReading } from './database-cpu.js';
import { median, round } from './stats.js';

/** One timed run of a load against one variant. */
export interface Measurement {
  /** Completed requests (or transactions, or messages) per second. */
  throughput: number;
  /** Latency percentiles, in milliseconds, where measured. */
  p50?: number;
  p99?: number;
  /** Completed requests (or transactions, or messages). */
  count: number;
  seconds: number;
  /** The app process's CPU time per request (user + system), in microseconds, where measured. */
  appCpuMicros?: number;
  /** The database server's CPU time per request (its backends on the bench database), in microseconds, where measured. */
  databaseCpuMicros?: number;
}

/** The medians of a variant's rounds. */
export type Summary = Omit<Measurement, 'count' | 'seconds'>;

/** A variant of a case: how to measure it once. */
export interface Arm {
  readonly name: string;
  /** Runs the variant for `seconds`; round 0 is the warm-up. */
  measure(round: number, seconds: number): Promise<Measurement>;
}

/** What `interleave` needs beyond the arms. */
export type Interleaving = Pick<BenchSettings, 'rounds' | 'roundSeconds' | 'warmupSeconds'> & Pick<BenchContext, 'log'>;

/**
 * Warms every arm up (round 0, not kept), then measures the arms in turn, A/B/A/B, `rounds` times
 * each, so that whatever else the machine is doing weighs on every arm alike. Returns each arm's
 * rounds in order.
 */
export async function interleave(arms: Arm[], how: Interleaving): Promise<Record<string, Measurement[]>> {
  for (const arm of arms) {
    how.log(`warm-up   ${arm.name.padEnd(24)} ${describe(await arm.measure(0, how.warmupSeconds))}`);
  }
  const results: Record<string, Measurement[]> = Object.fromEntries(arms.map((arm) => [arm.name, []]));
  for (let r = 1; r <= how.rounds; r++) {
    for (const arm of arms) {
      const measurement = await arm.measure(r, how.roundSeconds);
      results[arm.name].push(measurement);
      how.log(`round ${r}/${how.rounds} ${arm.name.padEnd(24)} ${describe(measurement)}`);
    }
  }
  return results;
}

/** The medians of throughput, p50, p99, app CPU and database CPU over the rounds (each taken on its own), where measured. */
export function summarize(rounds: Measurement[]): Summary {
  const p50 = rounds.flatMap((m) => m.p50 ?? []);
  const p99 = rounds.flatMap((m) => m.p99 ?? []);
  const cpu = rounds.flatMap((m) => m.appCpuMicros ?? []);
  const databaseCpu = rounds.flatMap((m) => m.databaseCpuMicros ?? []);
  return {
    throughput: round(median(rounds.map((m) => m.throughput)), 1),
    ...(p50.length > 0 ? { p50: round(median(p50)) } : {}),
    ...(p99.length > 0 ? { p99: round(median(p99)) } : {}),
    ...(cpu.length > 0 ? { appCpuMicros: Math.round(median(cpu)) } : {}),
    ...(databaseCpu.length > 0 ? { databaseCpuMicros: Math.round(median(databaseCpu)) } : {}),
  };
}

/** One line for the progress log. */
export function describe(m: Measurement): string {
  const latency = m.p50 === undefined || m.p99 === undefined ? '' : `  p50 ${m.p50.toFixed(2)} ms  p99 ${m.p99.toFixed(2)} ms`;
  const cpu = m.appCpuMicros === undefined ? '' : `  app CPU ${m.appCpuMicros.toFixed(0)} µs/req`;
  const databaseCpu = m.databaseCpuMicros === undefined ? '' : `  DB CPU ${m.databaseCpuMicros.toFixed(0)} µs/req`;
  return `${m.throughput.toFixed(0).padStart(6)}/s${latency}${cpu}${databaseCpu}  (${m.count} in ${m.seconds.toFixed(1)} s)`;
}

/**
 * Runs `measure` and adds the database server's CPU time per request to its measurement, where
 * the server runs on this machine: by default that of the client backends on the bench database
 * (`startCpuReading`); with `'server'`, that of the whole server (`startServerCpuReading`), as a
 * load whose backends exit at its end (pgbench's) needs.
 */
export async function withDatabaseCpu(
  database: BenchDatabase,
  measure: () => Promise<Measurement>,
  scope: 'backends' | 'server' = 'backends',
): Promise<Measurement> {
  const readCpu = await (scope === 'server' ? startServerCpuReading(database) : startCpuReading(database));
  const measurement = await measure();
  const micros = await readCpu();
  return micros === undefined ? measurement : { ...measurement, databaseCpuMicros: micros / measurement.count };
}

/** The p99 of a summary of loads that measure latencies (the HTTP loads do). */
export function p99Of(summary: Summary): number {
  if (summary.p99 === undefined) {
    throw new Error('this load measured no latencies');
  }
  return summary.p99;
}
