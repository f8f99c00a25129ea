import { type Platform, PLATFORMS } from '../../test/support/bench-processes.js';
import { runFixedRateLoad } from '../support/fixed-rate-load.js';
import { runAppLoad, uniqueCredits, withAppCpu } from '../support/http-load.js';
import { type Arm, describe, interleave, type Measurement, type Summary, summarize } from '../support/measurement.js';
import { round } from '../support/stats.js';
import { type BenchCase, type BenchContext, type CaseReport, type ChartGroup, checkFloor, emptyReport, withApps } from './bench-case.js';
import type { CreditRoute } from './http-first-deliveries.case.js';
import { PEER_LABEL } from './peer.case.js';

const ADDED_P50_FLOOR_MS = 0.3;
const ADDED_P99_FLOOR_MS = 1;
/** The fixed rate, as a share of the idempotent handler's own saturation throughput. */
const SHARE_OF_SATURATION = 0.5;
/** How far a round's achieved rate may fall below the asked one and still count as it. */
const RATE_TOLERANCE = 0.02;

/**
 * Case 9: the latency the idempotent handler adds to the plain one when neither is saturated: both
 * at one fixed request rate, half the idempotent handler's own saturation throughput (measured
 * first, on the idempotent process), so the case measures the claim, not queueing; interleaved, on Express and on Fastify. Added p50 and p99 are the idempotent
 * arm's medians minus the plain arm's. The peer of case 10 runs beside them at the same rate; the
 * floors are ours only.
 */
export const latency: BenchCase = {
  id: 9,
  title: 'HTTP, added latency at half load',
  async run(context): Promise<CaseReport> {
    const report = emptyReport();
    for (const platform of PLATFORMS) {
      const measured = await measureAtFixedRate(context, platform, 'c9', ['plain', 'idempotent', 'peer']);
      const added = reportAddedLatency(report, platform, measured, {
        idempotent: { name: 'idempotent', short: 'ours', series: 1 },
        peer: { name: PEER_LABEL, short: 'peer', series: 2 },
      });
      report.floors.push(
        checkFloor(`${platform}: added p50 at ${measured.rate}/s (ms)`, added.idempotent.p50, 'at most', ADDED_P50_FLOOR_MS),
        checkFloor(`${platform}: added p99 at ${measured.rate}/s (ms)`, added.idempotent.p99, 'at most', ADDED_P99_FLOOR_MS),
      );
      const group = report.chart.pop() as ChartGroup;
      report.chart.push({
        ...group,
        note: `${group.note}; ours' floors ≤ ${ADDED_P50_FLOOR_MS.toFixed(2)} / ≤ ${ADDED_P99_FLOOR_MS.toFixed(2)} ms`,
        met: report.floors.slice(-2).every((floor) => floor.met),
      });
      report.details[platform] = { ...measured, added };
    }
    return report;
  },
};

/** What `measureAtFixedRate` measured on one platform. */
export interface FixedRateMeasurement<Route extends CreditRoute> {
  /** The idempotent handler's saturation round (autocannon, as case 1 loads it). */
  saturation: Measurement;
  /** The asked rate, requests per second. */
  rate: number;
  rounds: Record<string, Measurement[]>;
  medians: Record<Route, Summary>;
  /** Each route's lowest achieved rate over its rounds, as a share of the asked one. */
  lowestRateShare: Record<Route, number>;
}

/**
 * Starts an app per route on `platform` (so the plain one never runs the module, as in case 1),
 * measures the idempotent one's saturation throughput, then loads every route at half that rate,
 * interleaved. `label` names the requests' keys.
 */
export async function measureAtFixedRate<Route extends CreditRoute>(
  { settings, startApp, log }: BenchContext,
  platform: Platform,
  label: string,
  routes: Route[],
): Promise<FixedRateMeasurement<Route>> {
  return withApps(routes, () => startApp(platform), async (apps) => {
    const idempotentApp = apps['idempotent' as Route];
    if (!idempotentApp) {
      throw new Error('a fixed rate is set from the idempotent route: measure it too');
    }
    const saturationLoad = (r: number, seconds: number) =>
      runAppLoad(idempotentApp, '/idempotent/credits', {
        connections: settings.connections,
        seconds,
        request: uniqueCredits(`${label}-${platform}-saturation-${r}`),
      });
    await saturationLoad(0, settings.warmupSeconds);
    const saturation = await saturationLoad(1, settings.roundSeconds);
    const rate = Math.round(saturation.throughput * SHARE_OF_SATURATION);
    log(`saturation ${platform} idempotent  ${describe(saturation)}: the arms run at ${rate}/s`);
    const arm = (route: Route): Arm => ({
      name: `${platform} ${route} at ${rate}/s`,
      measure: (r, seconds) => {
        const app = apps[route];
        return withAppCpu(app, () =>
          runFixedRateLoad({
            url: `${app.baseUrl}/${route}/credits`,
            rate,
            seconds,
            connections: settings.connections,
            request: uniqueCredits(`${label}-${platform}-${route}-${r}`),
          }),
        );
      },
    });
    const rounds = await interleave(routes.map(arm), { ...settings, log });
    const roundsOf = (route: Route) => rounds[arm(route).name];
    const medians = Object.fromEntries(routes.map((route) => [route, summarize(roundsOf(route))])) as Record<Route, Summary>;
    const lowestRateShare = Object.fromEntries(
      routes.map((route) => [route, round(Math.min(...roundsOf(route).map((m) => m.throughput)) / rate, 3)]),
    ) as Record<Route, number>;
    return { saturation, rate, rounds, medians, lowestRateShare };
  });
}

/** p50 and p99 a route adds to the plain one, in milliseconds. */
type AddedLatency = Record<'p50' | 'p99', number>;

/** How a variant is named in the table (`name`) and on the chart (`short`), and its colour there. */
type LatencyVariant = { name: string; short: string; series: number };

/**
 * Adds the rows (plain, then each of `variants`, by route) and a chart group of p50 and p99 bars
 * to `report`; returns the latency each variant adds to plain.
 */
export function reportAddedLatency<Route extends CreditRoute>(
  report: CaseReport,
  platform: Platform,
  { rate, medians, lowestRateShare }: FixedRateMeasurement<Route | 'plain'>,
  variants: Partial<Record<Route, LatencyVariant>>,
): Record<Route, AddedLatency> {
  const latencyOf = (summary: Summary) => ({ p50: summary.p50 ?? Number.NaN, p99: summary.p99 ?? Number.NaN });
  const plain = latencyOf(medians.plain);
  const labelled = Object.entries(variants) as [Route, LatencyVariant][];
  const added = Object.fromEntries(
    labelled.map(([route]) => {
      const { p50, p99 } = latencyOf(medians[route]);
      return [route, { p50: round(p50 - plain.p50, 3), p99: round(p99 - plain.p99, 3) }];
    }),
  ) as Record<Route, AddedLatency>;
  const rateNote = (route: Route | 'plain') =>
    lowestRateShare[route] < 1 - RATE_TOLERANCE ? `; RATE NOT HELD: ${Math.round(lowestRateShare[route] * rate)}/s achieved in a round` : '';
  const signed = (ms: number) => `${ms >= 0 ? '+' : '−'}${Math.abs(ms).toFixed(2)}`;
  report.rows.push(
    { variant: `${platform}, plain at ${rate}/s`, ...medians.plain, figure: `asked ${rate}/s${rateNote('plain')}` },
    ...labelled.map(([route, { name }]) => ({
      variant: `${platform}, ${name} at ${rate}/s`,
      ...medians[route],
      figure: `p50 ${signed(added[route].p50)} ms, p99 ${signed(added[route].p99)} ms vs plain${rateNote(route)}`,
    })),
  );
  const bars = (percentile: 'p50' | 'p99') => [
    { label: `plain ${percentile}`, value: plain[percentile], series: 0 },
    ...labelled.map(([route, { short, series }]) => ({ label: `${short} ${percentile}`, value: latencyOf(medians[route])[percentile], series })),
  ];
  report.chart.push({
    title: `9 · latency at ${rate}/s (half of ours' saturation) · ${platform}`,
    unit: 'ms',
    bars: [...bars('p50'), ...bars('p99')],
    note: `added p50 / p99 (ms): ${labelled.map(([route, { short }]) => `${short} ${signed(added[route].p50)} / ${signed(added[route].p99)}`).join(', ')}`,
  });
  return added;
}
