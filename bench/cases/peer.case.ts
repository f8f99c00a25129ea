import { type Platform, PLATFORMS } from '../../test/support/bench-processes.js';
import { installedVersion } from '../support/bench-packages.js';
import { REDIS_URL } from '../../test/support/brokers.js';
import { readRedisPersistence } from '../../test/support/broker-clients.js';
import { runAppLoad, uniqueCredits } from '../support/http-load.js';
import { type Arm, interleave, type Summary, summarize, withDatabaseCpu } from '../support/measurement.js';
import { round } from '../support/stats.js';
import { type BenchCase, type BenchContext, type CaseReport, checkFloor, emptyReport, reportVariantsAgainstPlain, withApps } from './bench-case.js';
import { expectNoNewLedgerRows } from '../../test/support/ledger.js';
import { processReplayedKeys, replayedCredits } from './http-duplicates.case.js';

/** What the table and the chart call the peer. */
export const PEER_LABEL = '@node-idempotency/nestjs';

/**
 * The routes of the case, each in a process of its own: the plain handler, ours, ours in lease
 * mode on Redis (the same kind of work as the peer's: two Redis operations around the handler's own
 * transaction), the peer's.
 */
const ROUTES = ['plain', 'idempotent', 'lease-redis', 'peer'] as const;
type Route = (typeof ROUTES)[number];
type ReplayedRoute = 'idempotent' | 'peer';
const REPLAYED_ROUTES: readonly ReplayedRoute[] = ['idempotent', 'peer'];
const NAMES: Record<Route, string> = { plain: 'plain', idempotent: 'idempotent', 'lease-redis': 'idempotent, lease on Redis', peer: PEER_LABEL };
const CHART_NAMES: Record<Route, string> = { plain: 'plain', idempotent: 'ours', 'lease-redis': 'ours, lease', peer: 'peer' };
/** Each route's colour on the chart, as case 1 and case 9 colour them. */
const SERIES: Record<Route, number> = { plain: 0, idempotent: 1, 'lease-redis': 3, peer: 2 };
/** The app CPU ours may add to a plain first delivery, in µs, and how far past the peer's it may go. */
const ADDED_APP_CPU_FLOOR_MICROS = 90;
const ADDED_APP_CPU_OVER_PEER = 1.2;

/**
 * Case 10: the peer, `@node-idempotency/nestjs` with its Redis storage, on the very same credit
 * handler, interleaved with ours and the plain handler: first deliveries against plain (as case 1)
 * and the replay path (as case 2), on Express and on Fastify. Case 9 has its added latency.
 *
 * What the peer does not guarantee (read from its source, `@node-idempotency/core` 1.0.7): its
 * claim is a Redis `SET key IN_PROGRESS NX PX 24h` before the handler, and its record a second
 * `SET key COMPLETE+response` after the handler returned, both outside the handler's database
 * transaction. So:
 * - a crash (or a failed Redis write) after the handler's COMMIT and before the record leaves the
 *   key IN_PROGRESS: every retry gets 409 until the key expires (24 h by default), and the retry
 *   after that runs the handler again: the credit is granted twice;
 * - a crash after the claim and before the COMMIT rolls the work back but not the claim: retries
 *   get 409 for 24 h before the work is done at all;
 * - a handler that throws (a rolled-back transaction, a dropped connection, a deadlock) has its
 *   error recorded as the key's COMPLETE answer: the retry gets the error replayed and the work is
 *   never done while the key lives;
 * - what Redis loses, the peer forgets: keys written less than a second before a crash with
 *   `appendfsync everysec`, all since the last snapshot without `appendonly`, those a failover's
 *   replica had not received. Each is processed again (`details.redis` says how this run's Redis
 *   was configured);
 * - a handler that outlasts the key's TTL lets a twin run beside it. The unique key is
 *   method, URL and `Idempotency-Key` (no sender, no handler), and it is HTTP only.
 * Ours claims in the handler's own transaction: claim, work and response commit together or not
 * at all, so none of these cases exists (see the guide, libs/idempotency/docs/operations.md, *What happens on a crash*).
 */
export const peer: BenchCase = {
  id: 10,
  title: `HTTP, the peer ${PEER_LABEL} (Redis)`,
  async run(context): Promise<CaseReport> {
    const report = emptyReport();
    report.details.versions = Object.fromEntries(
      ['@node-idempotency/nestjs', '@node-idempotency/core', '@node-idempotency/storage-adapter-redis', 'redis'].map((name) => [name, installedVersion('peer', name)]),
    );
    report.details.redis = { url: REDIS_URL, ...(await readRedisPersistence()) };
    for (const platform of PLATFORMS) {
      report.details[platform] = await measurePlatform(context, report, platform);
    }
    return report;
  },
};

/** The case on one platform: its rows, chart groups, and what goes into the details. */
async function measurePlatform({ settings, database, startApp, log }: BenchContext, report: CaseReport, platform: Platform) {
  return withApps(ROUTES, () => startApp(platform), async (apps) => {
    const replayed = (route: ReplayedRoute) => replayedCredits(`c10-${platform}-${route}`);
    for (const route of REPLAYED_ROUTES) {
      await processReplayedKeys(apps[route], `/${route}/credits`, settings.connections, replayed(route));
    }
    const first = (route: Route): Arm => ({
      name: `${platform} ${route}`,
      measure: (r, seconds) =>
        withDatabaseCpu(database, () =>
          runAppLoad(apps[route], `/${route}/credits`, { connections: settings.connections, seconds, request: uniqueCredits(`c10-${platform}-${route}-${r}`) }),
        ),
    });
    const replays = (route: ReplayedRoute): Arm => ({
      name: `${platform} ${route} replays`,
      measure: (_r, seconds) =>
        expectNoNewLedgerRows(database, () =>
          runAppLoad(apps[route], `/${route}/credits`, { connections: settings.connections, seconds, request: replayed(route) }),
        ),
    });
    const arms = [...ROUTES.map(first), ...REPLAYED_ROUTES.map(replays)];
    const rounds = await interleave(arms, { ...settings, log });
    const medians = Object.fromEntries(arms.map((arm) => [arm.name, summarize(rounds[arm.name])]));
    const ratios = reportVariantsAgainstPlain(report, {
      variant: platform,
      chartTitle: `10 · first deliveries, ours and the peer · ${platform}`,
      unit: 'req/s',
      plain: medians[`${platform} plain`],
      others: Object.fromEntries(ROUTES.filter((route) => route !== 'plain').map((route) => [NAMES[route], medians[`${platform} ${route}`]])),
    });
    reportFloors(report, platform, medians, ratios);
    const replayRatio = (route: ReplayedRoute) => round(medians[`${platform} ${route} replays`].throughput / medians[`${platform} ${route}`].throughput, 3);
    report.rows.push(
      ...REPLAYED_ROUTES.map((route) => ({
        variant: `${platform}, ${NAMES[route]} replays`,
        ...medians[`${platform} ${route} replays`],
        figure: `${replayRatio(route).toFixed(3)} × its first deliveries`,
      })),
    );
    report.chart.push({
      title: `10 · replays, ours and the peer (${PEER_LABEL}) · ${platform}`,
      unit: 'req/s',
      bars: REPLAYED_ROUTES.flatMap((route) => [
        { label: `${CHART_NAMES[route]}, first`, value: medians[`${platform} ${route}`].throughput, series: SERIES[route] },
        { label: `${CHART_NAMES[route]}, replays`, value: medians[`${platform} ${route} replays`].throughput, series: SERIES[route] },
      ]),
      note: REPLAYED_ROUTES.map((route) => `${CHART_NAMES[route]}: replays / first deliveries = ${replayRatio(route).toFixed(3)}`).join(', '),
    });
    return { rounds, medians, ratios, replayRatios: Object.fromEntries(REPLAYED_ROUTES.map((route) => [route, replayRatio(route)])) };
  });
}

/**
 * The floors against the peer, all from this one run: ours adds at most
 * `ADDED_APP_CPU_FLOOR_MICROS` of app CPU to a plain first delivery and at most
 * `ADDED_APP_CPU_OVER_PEER` × what the peer adds; our replays are at least as fast as the peer's;
 * lease mode on Redis keeps at least the peer's share of plain.
 */
function reportFloors(report: CaseReport, platform: Platform, medians: Record<string, Summary>, ratios: Record<string, number>): void {
  const appCpuAdded = (route: Route) => (medians[`${platform} ${route}`].appCpuMicros ?? Number.NaN) - (medians[`${platform} plain`].appCpuMicros ?? Number.NaN);
  const ours = appCpuAdded('idempotent');
  const peers = appCpuAdded('peer');
  report.floors.push(
    checkFloor(`${platform}: app CPU ours adds per first delivery (µs)`, ours, 'at most', ADDED_APP_CPU_FLOOR_MICROS),
    checkFloor(`${platform}: app CPU ours adds per first delivery (µs), against the peer's ${signedMicros(peers)} × ${ADDED_APP_CPU_OVER_PEER}`, ours, 'at most', round(peers * ADDED_APP_CPU_OVER_PEER, 0)),
    checkFloor(
      `${platform}: our replays (req/s), against the peer's`,
      medians[`${platform} idempotent replays`].throughput,
      'at least',
      round(medians[`${platform} peer replays`].throughput, 0),
    ),
    checkFloor(`${platform}: lease on Redis / plain, against the peer's / plain`, ratios[NAMES['lease-redis']], 'at least', ratios[NAMES.peer]),
  );
}

/** `µs` with its sign: +87, −12. */
function signedMicros(micros: number): string {
  return `${micros >= 0 ? '+' : '−'}${Math.abs(Math.round(micros))}`;
}
