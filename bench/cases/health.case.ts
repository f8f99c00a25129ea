import { seedProcessedMessages } from '../../test/support/processed-messages.js';
import { percentile } from '../../test/support/latency.js';
import { median, round } from '../support/stats.js';
import { type BenchCase, type CaseReport, checkFloor, emptyReport } from './bench-case.js';

const PLATFORM = 'express';
const STORE_ROWS = 1_000_000;
const WARMUP_CHECKS = 5;
const CHECKS = 50;
const FLOOR_MS = 10;

/**
 * Case 6: the idempotency health indicator's check (`isHealthy()`, the call a `GET /health` makes),
 * timed in the app process, on a store of 1,000,000 unexpired ids, vacuumed and analysed as a
 * store whose purge keeps up would be. One check after another, with no other load. The store is
 * emptied first, so it holds exactly those rows whichever cases ran before.
 */
export const health: BenchCase = {
  id: 6,
  title: 'Health',
  async run({ database, startApp, log }): Promise<CaseReport> {
    const report = emptyReport();
    await database.query('TRUNCATE processed_messages');
    await seedProcessedMessages(database, { count: STORE_ROWS, consumer: 'Seed.store', expired: false, sender: 'default' });
    await database.query('VACUUM ANALYZE processed_messages');
    const app = await startApp(PLATFORM);
    try {
      for (let i = 0; i < WARMUP_CHECKS; i++) {
        await app.health();
      }
      const timings: number[] = [];
      for (let i = 0; i < CHECKS; i++) {
        const { status, ms } = await app.health();
        if (status !== 'up') {
          throw new Error(`the health indicator reported the store ${status}`);
        }
        timings.push(round(ms, 3));
      }
      const medianMs = round(median(timings), 3);
      const p99Ms = round(percentile(timings, 99), 3);
      log(`${CHECKS} checks on ${STORE_ROWS} rows: median ${medianMs} ms, p99 ${p99Ms} ms, max ${Math.max(...timings)} ms`);
      const floor = checkFloor(`indicator median on ${STORE_ROWS.toLocaleString('en-US')} rows (ms)`, medianMs, 'at most', FLOOR_MS);
      report.floors.push(floor);
      report.details = { platform: PLATFORM, storeRows: STORE_ROWS, checks: CHECKS, timingsMs: timings, medianMs, p99Ms };
      report.rows.push({
        variant: `${PLATFORM}, indicator on ${STORE_ROWS.toLocaleString('en-US')} rows`,
        p50: medianMs,
        p99: p99Ms,
        figure: `median of ${CHECKS} checks`,
      });
      report.chart.push({
        title: `6 · health indicator · ${STORE_ROWS.toLocaleString('en-US')} rows`,
        unit: 'ms',
        bars: [
          { label: 'median', value: medianMs },
          { label: 'p99', value: p99Ms },
        ],
        note: `median ${medianMs.toFixed(2)} ms (floor ≤ ${FLOOR_MS} ms)`,
        met: floor.met,
      });
    } finally {
      await app.stop();
    }
    return report;
  },
};
