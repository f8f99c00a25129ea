import { type Platform, PLATFORMS } from '../../test/support/bench-processes.js';
import type { BenchRuntime } from '../support/bench-runtime.js';
import { runAppLoad, uniqueCredits } from '../support/http-load.js';
import { type Arm, interleave, type Measurement, type Summary, summarize, withDatabaseCpu } from '../support/measurement.js';
import { difference } from '../support/stats.js';
import { type BenchCase, type BenchContext, type CaseReport, checkFloor, emptyReport, reportAgainstPlain, withApps } from './bench-case.js';

/** The floor for the database CPU that the claim and the record add to a request. */
const ADDED_DATABASE_CPU_FLOOR_MICROS = 150;

/**
 * Case 1: the credit handler with `@IdempotentHandler()` against the very same handler and
 * transaction without it, every request a new key, on Express and on Fastify; on the headline
 * Node and then on the one beside it (Node 24 and Node 20).
 */
export const httpFirstDeliveries: BenchCase = {
  id: 1,
  title: 'HTTP, first deliveries',
  async run(context): Promise<CaseReport> {
    const report = emptyReport();
    const { headline, beside } = context.runtimes;
    for (const platform of PLATFORMS) {
      for (const runtime of beside ? [headline, beside] : [headline]) {
        const { rounds, medians } = await measureFirstDeliveries(context, platform, `c1-${runtime.name}`, ['plain', 'idempotent'], runtime);
        const variant = `${platform}, ${runtime.name}`;
        const ratio = reportAgainstPlain(report, {
          variant,
          floorLabel: `${variant}: idempotent / plain throughput`,
          floor: 0.8,
          chartTitle: `1 · first deliveries · ${platform} · ${runtime.name}`,
          unit: 'req/s',
          plain: medians.plain,
          idempotent: medians.idempotent,
        });
        const addedDatabaseCpu = difference(medians.idempotent.databaseCpuMicros, medians.plain.databaseCpuMicros);
        if (addedDatabaseCpu !== undefined) {
          report.floors.push(checkFloor(`${variant}: database CPU added per request (µs)`, addedDatabaseCpu, 'at most', ADDED_DATABASE_CPU_FLOOR_MICROS));
        }
        report.details[variant] = { node: runtime.version, rounds, medians, ratio, addedDatabaseCpu };
      }
    }
    return report;
  },
};

/** The bench app's credit routes: `POST /<route>/credits` (`peer`: @node-idempotency/nestjs). */
export type CreditRoute = 'plain' | 'idempotent' | 'lease-postgres' | 'lease-redis' | 'peer';

/**
 * Loads each of `routes` on `platform` with first deliveries (every request a new key; `label`
 * names the keys), interleaved, with the apps on `runtime`, and returns the rounds and medians of each.
 */
export async function measureFirstDeliveries<Route extends CreditRoute>(
  { settings, database, runtimes, startApp, log }: BenchContext,
  platform: Platform,
  label: string,
  routes: Route[],
  runtime: BenchRuntime = runtimes.headline,
): Promise<{ rounds: Record<string, Measurement[]>; medians: Record<Route, Summary> }> {
  // One process per route: the plain one never runs an idempotent request, so it never pays for
  // what the module switches on once used (on Node 20, AsyncLocalStorage's promise hooks,
  // process-wide): it is the app without the module.
  return withApps(routes, () => startApp(platform, runtime), async (apps) => {
    const arm = (route: Route): Arm => ({
      name: `${platform} ${route}`,
      measure: (r, seconds) =>
        withDatabaseCpu(database, () =>
          runAppLoad(apps[route], `/${route}/credits`, {
            connections: settings.connections,
            seconds,
            request: uniqueCredits(`${label}-${platform}-${route}-${r}`),
          }),
        ),
    });
    const rounds = await interleave(routes.map(arm), { ...settings, log });
    const medians = Object.fromEntries(routes.map((route) => [route, summarize(rounds[`${platform} ${route}`])])) as Record<Route, Summary>;
    return { rounds, medians };
  });
}
