import { PLATFORMS } from '../support/bench-app.process.js';
import { runAppLoad, uniqueCredits } from '../support/http-load.js';
import { type Arm, interleave, summarize, withDatabaseCpu } from '../support/measurement.js';
import { type BenchCase, type CaseReport, emptyReport, reportAgainstPlain } from './bench-case.js';

/**
 * Case 1: the credit handler with `@IdempotentHandler()` against the very same handler and
 * transaction without it, every request a new key, on Express and on Fastify.
 */
export const httpFirstDeliveries: BenchCase = {
  id: 1,
  title: 'HTTP, first deliveries',
  async run({ settings, database, startApp, log }): Promise<CaseReport> {
    const report = emptyReport();
    for (const platform of PLATFORMS) {
      // One process per variant: the plain one never runs an idempotent request, so it never
      // pays for what the module switches on once used (on Node 20, AsyncLocalStorage's promise
      // hooks, process-wide): it is the app without the module.
      const apps = { plain: await startApp(platform), idempotent: await startApp(platform) };
      try {
        const arm = (variant: keyof typeof apps): Arm => ({
          name: `${platform} ${variant}`,
          measure: (r, seconds) =>
            withDatabaseCpu(database, () =>
              runAppLoad(apps[variant], `/${variant}/credits`, {
                connections: settings.connections,
                seconds,
                request: uniqueCredits(`c1-${platform}-${variant}-${r}`),
              }),
            ),
        });
        const rounds = await interleave([arm('plain'), arm('idempotent')], { ...settings, log });
        const plain = summarize(rounds[`${platform} plain`]);
        const idempotent = summarize(rounds[`${platform} idempotent`]);
        const ratio = reportAgainstPlain(report, {
          variant: platform,
          floorLabel: `${platform}: idempotent / plain throughput`,
          chartTitle: `1 · first deliveries · ${platform}`,
          unit: 'req/s',
          plain,
          idempotent,
        });
        report.details[platform] = { rounds, medians: { plain, idempotent }, ratio };
      } finally {
        await Promise.all([apps.plain.stop(), apps.idempotent.stop()]);
      }
    }
    return report;
  },
};
