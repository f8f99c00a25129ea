import type { ProcessUsage } from '../../test/apps/bench/process-usage.js';
import { runAppLoad, uniqueCredits } from '../support/http-load.js';
import { describe } from '../support/measurement.js';
import { round } from '../support/stats.js';
import { type BenchCase, type CaseReport, checkFloor, emptyReport } from './bench-case.js';

const FLOOR = 1.1;
const PLATFORM = 'express';

/**
 * Case 7: the app's RSS (after a full GC) once 20,000 and once 200,000 idempotent requests have
 * been served by one fresh process: growth between the two is what the module retains per request.
 */
export const memory: BenchCase = {
  id: 7,
  title: 'Memory',
  async run({ settings, startApp, log }): Promise<CaseReport> {
    const report = emptyReport();
    const app = await startApp(PLATFORM);
    try {
      const readings: (ProcessUsage & { requests: number })[] = [];
      let served = 0;
      for (const [i, checkpoint] of settings.memoryCheckpoints.entries()) {
        const load = await runAppLoad(app, '/idempotent/credits', {
          connections: settings.connections,
          amount: checkpoint - served,
          request: uniqueCredits(`c7-${i}`),
        });
        served = checkpoint;
        const reading = await app.usage({ gc: true });
        if (!reading.collected) {
          throw new Error('the bench app was started without --expose-gc: its RSS would include uncollected garbage');
        }
        readings.push({ requests: served, ...reading });
        log(`after ${served} requests: RSS ${megabytes(reading.rss)} MB, heap ${megabytes(reading.heapUsed)} MB  [${describe(load)}]`);
      }
      const [early, late] = readings;
      const ratio = round(late.rss / early.rss, 3);
      const floor = checkFloor(`RSS after ${late.requests} / after ${early.requests} requests`, ratio, 'at most', FLOOR);
      report.details = { platform: PLATFORM, readings, ratio };
      report.rows = readings.map((reading) => ({
        variant: `${PLATFORM}, after ${reading.requests.toLocaleString('en-US')} requests`,
        figure:
          `RSS ${megabytes(reading.rss)} MB, heap ${megabytes(reading.heapUsed)} MB` +
          (reading === late ? `; RSS ${ratio.toFixed(3)} × after ${early.requests.toLocaleString('en-US')}` : ''),
      }));
      report.floors.push(floor);
      report.chart.push({
        title: `7 · memory · ${PLATFORM}`,
        unit: 'MB RSS',
        bars: readings.map((reading) => ({ label: `after ${reading.requests.toLocaleString('en-US')}`, value: Number(megabytes(reading.rss)) })),
        note: `RSS after ${late.requests.toLocaleString('en-US')} / after ${early.requests.toLocaleString('en-US')} = ${ratio.toFixed(3)} (floor ≤ ${FLOOR.toFixed(2)})`,
        met: floor.met,
      });
    } finally {
      await app.stop();
    }
    return report;
  },
};

function megabytes(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(1);
}
