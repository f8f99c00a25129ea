import { type BenchAppOptions, type BenchAppProcess, type Platform } from '../../test/support/bench-processes.js';
import { runAppLoad, uniqueCredits } from '../support/http-load.js';
import { type Arm, interleave, type Summary, summarize, withDatabaseCpu } from '../support/measurement.js';
import { difference, round } from '../support/stats.js';
import { type BenchCase, type BenchContext, type CaseReport, emptyReport, reportVariantsAgainstPlain, withApps } from './bench-case.js';

/** Case 1's headline platform. */
const PLATFORM: Platform = 'express';

/**
 * The case's configurations, each an app process of its own: the route it loads and the options it
 * starts with. `slug` names its keys: no slug may start another's, so that a key prefix selects one
 * configuration's records. Four processes with pools of 20 stay within the bench server's default
 * 100 connections; a fifth (both options on) would not, and its warm-up was answered 503.
 */
const CONFIGURATIONS = {
  plain: { route: 'plain', slug: 'plain', options: {} },
  idempotent: { route: 'idempotent', slug: 'idempotent', options: {} },
  encryption: { route: 'idempotent', slug: 'encryption', options: { encryption: true } },
  tracing: { route: 'idempotent', slug: 'tracing', options: { tracing: true } },
} as const satisfies Record<string, { route: 'plain' | 'idempotent'; slug: string; options: BenchAppOptions }>;
type Configuration = keyof typeof CONFIGURATIONS;
const NAMES = Object.keys(CONFIGURATIONS) as Configuration[];
/** The idempotent configurations with an option on, as the rows and bars name them. */
const WITH_OPTIONS: readonly Exclude<Configuration, 'plain' | 'idempotent'>[] = ['encryption', 'tracing'];

/**
 * Case 11: what encryption at rest (`encryption`) and tracing (an OpenTelemetry SDK tracer provider
 * registered, its spans exported to nothing) cost the idempotent handler: HTTP first deliveries,
 * as case 1 (Express, the headline Node), of the plain handler, the idempotent one with the
 * module's defaults, and the idempotent one with encryption and with tracing, each in
 * a process of its own, interleaved. `@opentelemetry/api` is installed in every process, so the
 * default one starts the module's spans on the API's no-op tracer: what tracing adds is the SDK's
 * recording. After the rounds the case checks that every record of the encrypting processes is
 * sealed and none of the others', and that the tracing processes exported a span per request.
 */
export const productionOptions: BenchCase = {
  id: 11,
  title: 'Production options: encryption and tracing',
  async run(context): Promise<CaseReport> {
    const { settings, database, startApp, log } = context;
    const report = emptyReport();
    const requests = Object.fromEntries(NAMES.map((name) => [name, 0])) as Record<Configuration, number>;
    const keyPrefix = (name: Configuration) => `c11-${PLATFORM}-${CONFIGURATIONS[name].slug}-`;
    return withApps(NAMES, (name) => startApp(PLATFORM, undefined, CONFIGURATIONS[name].options), async (apps) => {
      const arm = (name: Configuration): Arm => ({
        name: `${PLATFORM} ${name}`,
        measure: async (r, seconds) => {
          const measurement = await withDatabaseCpu(database, () =>
            runAppLoad(apps[name], `/${CONFIGURATIONS[name].route}/credits`, {
              connections: settings.connections,
              seconds,
              request: uniqueCredits(`${keyPrefix(name)}${r}`),
            }),
          );
          requests[name] += measurement.count;
          return measurement;
        },
      });
      const rounds = await interleave(NAMES.map(arm), { ...settings, log });
      const medians = Object.fromEntries(NAMES.map((name) => [name, summarize(rounds[`${PLATFORM} ${name}`])])) as Record<Configuration, Summary>;
      const checks = await checkOptionsTookEffect(context, apps, requests, keyPrefix);

      const ratios = reportVariantsAgainstPlain(report, {
        variant: PLATFORM,
        chartTitle: `11 · encryption and tracing · first deliveries · ${PLATFORM}`,
        unit: 'req/s',
        plain: medians.plain,
        others: Object.fromEntries(NAMES.filter((name) => name !== 'plain').map((name) => [label(name), medians[name]])),
      });
      // Each option against the idempotent handler without it: the option's own cost.
      const againstDefaults = Object.fromEntries(
        WITH_OPTIONS.map((name) => [
          name,
          {
            throughput: round(medians[name].throughput / medians.idempotent.throughput, 3),
            addedAppCpuMicros: difference(medians[name].appCpuMicros, medians.idempotent.appCpuMicros),
          },
        ]),
      );
      report.rows = report.rows.map((row) => {
        const name = WITH_OPTIONS.find((option) => row.variant === `${PLATFORM}, ${label(option)}`);
        return name === undefined ? row : { ...row, figure: `${row.figure}; ${againstDefaults[name].throughput.toFixed(3)} × idempotent` };
      });
      const group = report.chart[report.chart.length - 1];
      report.chart[report.chart.length - 1] = {
        ...group,
        bars: group.bars.map((bar) => ({ ...bar, label: bar.label.replace('idempotent, ', '') })),
        note: `idempotent / plain = ${ratios.idempotent.toFixed(3)}; against idempotent: ${WITH_OPTIONS.map((name) => `${name} ${againstDefaults[name].throughput.toFixed(3)}`).join(', ')}`,
      };
      report.details[PLATFORM] = { node: context.runtimes.headline.version, rounds, medians, ratios, againstDefaults, checks };
      return report;
    });
  },
};

/** The table's and chart's name of a configuration. */
function label(name: Configuration): string {
  return name === 'plain' || name === 'idempotent' ? name : `idempotent, ${name}`;
}

/**
 * Fails the case unless the options did what they say: every record an encrypting process wrote is
 * sealed (`response_headers` NULL, the sealed bytes in `response_body`) and every other record is
 * not, and each tracing process exported at least one span per request it answered (warm-up
 * included). Returns what it counted.
 */
async function checkOptionsTookEffect(
  { database }: BenchContext,
  apps: Record<Configuration, BenchAppProcess>,
  requests: Record<Configuration, number>,
  keyPrefix: (name: Configuration) => string,
) {
  const checks: Record<string, { requests: number; records?: number; sealed?: number; spans?: number }> = {};
  for (const name of NAMES.filter((configuration) => configuration !== 'plain')) {
    const { options } = CONFIGURATIONS[name];
    const [{ records, sealed }] = await database.query<{ records: number; sealed: number }>(
      `SELECT count(*)::int AS records, count(*) FILTER (WHERE response_headers IS NULL AND response_body IS NOT NULL)::int AS sealed
         FROM processed_messages WHERE message_id LIKE $1`,
      [`${keyPrefix(name)}%`],
    );
    const { spans } = await apps[name].usage();
    checks[name] = { requests: requests[name], records, sealed, ...(spans === undefined ? {} : { spans }) };
    const encrypted = 'encryption' in options && options.encryption;
    if (records < requests[name] || sealed !== (encrypted ? records : 0)) {
      throw new Error(`${name}: ${records} records for ${requests[name]} answered requests, ${sealed} of them sealed (expected ${encrypted ? 'all' : 'none'})`);
    }
    const traced = 'tracing' in options && options.tracing;
    if (traced ? spans === undefined || spans < requests[name] : spans !== undefined) {
      throw new Error(`${name}: ${spans ?? 'no'} spans exported for ${requests[name]} answered requests (expected ${traced ? 'one per request' : 'no tracer provider'})`);
    }
  }
  return checks;
}
