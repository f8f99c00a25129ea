import type { BenchAppOptions, BenchAppProcess, Platform } from '../../test/support/bench-processes.js';
import type { BenchDatabase } from '../../test/support/bench-database.js';
import type { BenchRuntime, BenchRuntimes } from '../support/bench-runtime.js';
import type { Summary } from '../support/measurement.js';
import { round } from '../support/stats.js';

/** How long and how hard the cases measure; see `bench.settings.ts`. */
export interface BenchSettings {
  /** Rounds per arm; the arms of a case alternate A/B/A/B. */
  readonly rounds: number;
  /** Seconds per round. */
  readonly roundSeconds: number;
  /** Seconds each arm runs, unmeasured, before the first round. */
  readonly warmupSeconds: number;
  /** Concurrent HTTP connections (autocannon) and pgbench clients. */
  readonly connections: number;
  /** The request counts after which the memory case reads the RSS. */
  readonly memoryCheckpoints: readonly [number, number];
  /** Messages each arm of the RabbitMQ case consumes, over all its rounds (its warm-up not counted). */
  readonly consumerMessages: number;
  /** A short trial run: fewer, shorter rounds; its figures are not the published ones. */
  readonly quick: boolean;
}

/** What a case is given by the runner. */
export interface BenchContext {
  readonly settings: BenchSettings;
  readonly database: BenchDatabase;
  /** The Node every case's app processes run on (`headline`), and the one case 1 also runs on. */
  readonly runtimes: BenchRuntimes;
  /** Starts the bench app on `platform`, on `runtime` (by default the headline runtime), with `options` (by default none). */
  startApp(platform: Platform, runtime?: BenchRuntime, options?: BenchAppOptions): Promise<BenchAppProcess>;
  log(line: string): void;
}

/** A floor of the issue, checked against a measured figure. */
export interface FloorCheck {
  readonly label: string;
  readonly value: number;
  readonly bound: 'at least' | 'at most';
  readonly floor: number;
  readonly met: boolean;
}

/** A line of the README's table. Latencies in milliseconds. */
export interface TableRow extends Readonly<Partial<Summary>> {
  readonly variant: string;
  /** The case's headline figure for this line: a ratio, a fraction, a size. */
  readonly figure?: string;
}

/** A group of bars on the chart, drawn to its own scale. */
export interface ChartGroup {
  readonly title: string;
  readonly unit: string;
  /**
   * `series` picks the bar's colour, so that one variant keeps its colour over several bars and
   * groups (plain 0, ours 1, the peer 2, the order of the groups against plain); by default, the
   * bar's place in its group.
   */
  readonly bars: readonly { readonly label: string; readonly value: number; readonly series?: number }[];
  /** One line under the bars: the ratio and its floor. */
  readonly note: string;
  /** Whether the group's floor is met; undefined where the case has none. */
  readonly met?: boolean;
}

/** What a case hands back: figures for the table, floors, the chart, and its raw rounds. */
export interface CaseReport {
  rows: TableRow[];
  floors: FloorCheck[];
  chart: ChartGroup[];
  /** The raw rounds, medians and ratios, for the results JSON. */
  details: Record<string, unknown>;
}

/** An empty report for a case to fill. */
export function emptyReport(): CaseReport {
  return { rows: [], floors: [], chart: [], details: {} };
}

/** One numbered case of issue 5. */
export interface BenchCase {
  readonly id: number;
  readonly title: string;
  run(context: BenchContext): Promise<CaseReport>;
}

/** Checks `value` against a floor of the issue. */
export function checkFloor(label: string, value: number, bound: FloorCheck['bound'], floor: number): FloorCheck {
  return { label, value, bound, floor, met: bound === 'at least' ? value >= floor : value <= floor };
}

/** Starts an app for each of `names` with `start`, a process each, runs `use` on them, and stops them all whatever `use` does. */
export async function withApps<Name extends string, T>(names: readonly Name[], start: (name: Name) => Promise<BenchAppProcess>, use: (apps: Record<Name, BenchAppProcess>) => Promise<T>): Promise<T> {
  const apps = {} as Record<Name, BenchAppProcess>;
  try {
    for (const name of names) {
      apps[name] = await start(name);
    }
    return await use(apps);
  } finally {
    await Promise.all(Object.values<BenchAppProcess>(apps).map((app) => app.stop()));
  }
}

/** Thrown by a case that cannot run on this machine (a missing tool); the runner records why. */
export class CaseSkipped extends Error {
  override readonly name = 'CaseSkipped';
}

/** Variants of a handler, each against the very same handler without the module; no floor applies. */
interface VariantsAgainstPlain {
  /** What the rows' variant names start with: a platform, a prefetch. */
  readonly variant: string;
  readonly chartTitle: string;
  readonly unit: string;
  readonly plain: Summary;
  /** The variants by label, as the rows and bars name them. */
  readonly others: Readonly<Record<string, Summary>>;
}

/** The idempotent variant against the very same handler without the module, with the floor for its throughput as a fraction of the plain one's. */
interface AgainstPlain extends Omit<VariantsAgainstPlain, 'others'> {
  readonly floorLabel: string;
  readonly floor: number;
  readonly idempotent: Summary;
}

/** Adds the table rows and the chart group of `comparison` to `report`; returns each variant's throughput ratio to plain. */
export function reportVariantsAgainstPlain(report: CaseReport, comparison: VariantsAgainstPlain): Record<string, number> {
  const { variant, plain, others } = comparison;
  const ratios = Object.fromEntries(Object.entries(others).map(([label, summary]) => [label, round(summary.throughput / plain.throughput, 3)]));
  report.rows.push(
    { variant: `${variant}, plain`, ...plain },
    ...Object.entries(others).map(([label, summary]) => ({ variant: `${variant}, ${label}`, ...summary, figure: `${ratios[label].toFixed(3)} × plain` })),
  );
  report.chart.push({
    title: comparison.chartTitle,
    unit: comparison.unit,
    bars: [{ label: 'plain', value: plain.throughput }, ...Object.entries(others).map(([label, summary]) => ({ label, value: summary.throughput }))],
    note: Object.entries(ratios)
      .map(([label, ratio]) => `${label} / plain = ${ratio.toFixed(3)}`)
      .join(', '),
  });
  return ratios;
}

/**
 * Adds a comparison's two table rows, its floor (a fraction of the plain throughput) and its
 * chart group to `report`, and returns the throughput ratio.
 */
export function reportAgainstPlain(report: CaseReport, comparison: AgainstPlain): number {
  const { idempotent: ratio } = reportVariantsAgainstPlain(report, { ...comparison, others: { idempotent: comparison.idempotent } });
  const floor = checkFloor(comparison.floorLabel, ratio, 'at least', comparison.floor);
  report.floors.push(floor);
  const group = report.chart.pop() as ChartGroup;
  report.chart.push({ ...group, note: `${group.note} (floor ≥ ${comparison.floor.toFixed(2)})`, met: floor.met });
  return ratio;
}
