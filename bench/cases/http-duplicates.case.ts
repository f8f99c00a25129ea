import { type BenchAppProcess, PLATFORMS } from '../../test/support/bench-processes.js';
import { expectNoNewLedgerRows } from '../../test/support/ledger.js';
import { creditBody, type HttpLoad, runAppLoad, uniqueCredits } from '../support/http-load.js';
import { type Arm, interleave, summarize } from '../support/measurement.js';
import { round } from '../support/stats.js';
import { type BenchCase, type CaseReport, checkFloor, emptyReport } from './bench-case.js';

const FLOOR = 1.5;
/** Keys processed once before the rounds; the replay arm sends them again and again. */
const REPLAYED_KEYS = 1000;

/**
 * Case 2: the replay path (a duplicate answered from the recorded response, the handler not run)
 * against first deliveries of the same idempotent handler, on Express and on Fastify.
 */
export const httpDuplicates: BenchCase = {
  id: 2,
  title: 'HTTP, duplicates',
  async run({ settings, database, startApp, log }): Promise<CaseReport> {
    const report = emptyReport();
    for (const platform of PLATFORMS) {
      const app = await startApp(platform);
      try {
        const path = '/idempotent/credits';
        const replayed = replayedCredits(`c2-${platform}`);
        await processReplayedKeys(app, path, settings.connections, replayed);
        const first: Arm = {
          name: `${platform} first deliveries`,
          measure: (r, seconds) =>
            runAppLoad(app, path, { connections: settings.connections, seconds, request: uniqueCredits(`c2-${platform}-first-${r}`) }),
        };
        const replays: Arm = {
          name: `${platform} replays`,
          measure: (_r, seconds) =>
            expectNoNewLedgerRows(database, () => runAppLoad(app, path, { connections: settings.connections, seconds, request: replayed })),
        };
        const rounds = await interleave([first, replays], { ...settings, log });
        const firstDeliveries = summarize(rounds[first.name]);
        const replaysSummary = summarize(rounds[replays.name]);
        const ratio = round(replaysSummary.throughput / firstDeliveries.throughput, 3);
        report.details[platform] = { rounds, medians: { firstDeliveries, replays: replaysSummary }, ratio };
        report.rows.push(
          { variant: `${platform}, first deliveries`, ...firstDeliveries },
          { variant: `${platform}, replays`, ...replaysSummary, figure: `${ratio.toFixed(3)} × first deliveries` },
        );
        const floor = checkFloor(`${platform}: replays / first deliveries throughput`, ratio, 'at least', FLOOR);
        report.floors.push(floor);
        report.chart.push({
          title: `2 · duplicates · ${platform}`,
          unit: 'req/s',
          bars: [
            { label: 'first deliveries', value: firstDeliveries.throughput },
            { label: 'replays', value: replaysSummary.throughput },
          ],
          note: `replays / first deliveries = ${ratio.toFixed(3)} (floor ≥ ${FLOOR.toFixed(2)})`,
          met: floor.met,
        });
      } finally {
        await app.stop();
      }
    }
    return report;
  },
};

/** Requests that go round the same `REPLAYED_KEYS` keys (`<label>-seed-<n>`), each with its own body every time. */
export function replayedCredits(label: string): HttpLoad['request'] {
  return (n) => ({ key: `${label}-seed-${n % REPLAYED_KEYS}`, body: creditBody(n % REPLAYED_KEYS) });
}

/** Sends `replayed` to `path` twice round its keys, so each one has surely been processed before a replay round. */
export async function processReplayedKeys(app: BenchAppProcess, path: string, connections: number, replayed: HttpLoad['request']): Promise<void> {
  await runAppLoad(app, path, { connections, amount: 2 * REPLAYED_KEYS, request: replayed });
}
