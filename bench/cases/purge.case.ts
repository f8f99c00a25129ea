import type { PurgeRun } from 'nestjs-idempotent-consumer';
import type { BenchDatabase } from '../../test/support/bench-database.js';
import { runAppLoad, uniqueCredits } from '../support/http-load.js';
import { describe, type Measurement, p99Of, summarize } from '../support/measurement.js';
import { countProcessedMessages, seedProcessedMessages } from '../../test/support/processed-messages.js';
import { median, round } from '../support/stats.js';
import { type BenchCase, type CaseReport, checkFloor, emptyReport } from './bench-case.js';

const PLATFORM = 'express';
const EXPIRED_ROWS = 1_000_000;
/** Unexpired ids beside the expired ones, seeded once; the purge must leave every one. */
const LIVE_ROWS = 50_000;
const LIVE_CONSUMER = 'Seed.live';
const RATE_FLOOR = 100_000;
const P99_FLOOR = 1.5;
/** A cap on the claim load during a purge; the purge ends it long before. */
const LOAD_LIMIT_SECONDS = 600;

/** One round: claims without a purge, then claims during a purge of the same store. */
interface PurgeRound {
  seedSeconds: number;
  without: Measurement;
  during: Measurement;
  purge: Omit<PurgeRun, 'startedAt' | 'outcome'> & { rowsPerSecond: number };
}

/**
 * Case 5: the app's `purgeNow()` (`POST /purge`) deleting 1,000,000 expired ids while the
 * idempotent handler takes new claims at full load, against the same load on the same store
 * without a purge. Each round seeds the expired rows anew, then measures claims without and during
 * the purge, A/B; the purge's rows per second are its own duration's. The case starts from an
 * empty store, so its figures do not depend on which cases ran before it.
 */
export const purge: BenchCase = {
  id: 5,
  title: 'Purge',
  async run({ settings, database, startApp, log }): Promise<CaseReport> {
    const report = emptyReport();
    await database.query('TRUNCATE processed_messages');
    await seedProcessedMessages(database, { count: LIVE_ROWS, consumer: LIVE_CONSUMER, expired: false, sender: 'default' });
    const app = await startApp(PLATFORM);
    try {
      const claims = (label: string, load: { seconds: number; until?: Promise<unknown> }) =>
        runAppLoad(app, '/idempotent/credits', { connections: settings.connections, request: uniqueCredits(`c5-${label}`), ...load });
      log(`warm-up   ${'claims'.padEnd(24)} ${describe(await claims('warm-up', { seconds: settings.warmupSeconds }))}`);
      const rounds: PurgeRound[] = [];
      for (let r = 1; r <= settings.rounds; r++) {
        const step = (name: string, text: string) => log(`round ${r}/${settings.rounds} ${name.padEnd(24)} ${text}`);
        const seedSeconds = await seedExpiredRows(database, r);
        step('seed', `${EXPIRED_ROWS} expired rows, vacuumed, analysed and checkpointed in ${seedSeconds} s`);
        const without = await claims(`without-${r}`, { seconds: settings.roundSeconds });
        step('claims without a purge', describe(without));
        const purging = app.purge();
        const [during, run] = await Promise.all([claims(`during-${r}`, { seconds: LOAD_LIMIT_SECONDS, until: purging }), purging]);
        const rowsPerSecond = Math.round(run.rows / (run.durationMs / 1000));
        step('claims during the purge', describe(during));
        step('purge', `${run.rows} rows in ${run.batches} batches, ${run.durationMs} ms = ${rowsPerSecond} rows/s`);
        await expectEveryExpiredRowPurged(database, run, r);
        // As autovacuum would, so the next round's seed starts on a table without dead rows.
        await database.query('VACUUM processed_messages');
        rounds.push({ seedSeconds, without, during, purge: { rows: run.rows, batches: run.batches, durationMs: run.durationMs, rowsPerSecond } });
      }
      const without = summarize(rounds.map((each) => each.without));
      const during = summarize(rounds.map((each) => each.during));
      const rowsPerSecond = Math.round(median(rounds.map((each) => each.purge.rowsPerSecond)));
      const p99Ratio = round(p99Of(during) / p99Of(without), 3);
      const rateFloor = checkFloor('purge rows per second during claims', rowsPerSecond, 'at least', RATE_FLOOR);
      const p99Floor = checkFloor('claim p99 during the purge / without it', p99Ratio, 'at most', P99_FLOOR);
      report.floors.push(rateFloor, p99Floor);
      report.details = { platform: PLATFORM, expiredRows: EXPIRED_ROWS, liveRows: LIVE_ROWS, rounds, medians: { without, during, rowsPerSecond }, p99Ratio };
      report.rows.push(
        { variant: `${PLATFORM}, claims without a purge`, ...without },
        { variant: `${PLATFORM}, claims during the purge`, ...during, figure: `p99 ${p99Ratio.toFixed(3)} × without` },
        { variant: `purge of ${EXPIRED_ROWS.toLocaleString('en-US')} expired rows (rows/s)`, throughput: rowsPerSecond },
      );
      report.chart.push(
        {
          title: `5 · purge · claim p99 · ${PLATFORM}`,
          unit: 'ms',
          bars: [
            { label: 'without a purge', value: p99Of(without) },
            { label: 'during the purge', value: p99Of(during) },
          ],
          note: `during / without = ${p99Ratio.toFixed(3)} (floor ≤ ${P99_FLOOR.toFixed(2)})`,
          met: p99Floor.met,
        },
        {
          title: `5 · purge · rate while claims run`,
          unit: 'rows/s',
          bars: [{ label: `${EXPIRED_ROWS.toLocaleString('en-US')} expired rows`, value: rowsPerSecond }],
          note: `median of ${rounds.length} purges, each while claims run (floor ≥ ${RATE_FLOOR.toLocaleString('en-US')} rows/s)`,
          met: rateFloor.met,
        },
      );
    } finally {
      await app.stop();
    }
    return report;
  },
};

/**
 * Seeds round `r`'s expired rows and leaves the store as a service's would be: vacuumed and
 * analysed (the rows are old), and just past a checkpoint, so that no checkpoint forced by the
 * seed's own WAL falls into a measurement. (A purge's first change to each page after a checkpoint
 * writes the whole page to the WAL, as it would in production.)
 * @returns the seconds it took.
 */
async function seedExpiredRows(database: BenchDatabase, r: number): Promise<number> {
  const started = performance.now();
  await seedProcessedMessages(database, { count: EXPIRED_ROWS, consumer: expiredConsumer(r), expired: true, sender: 'default' });
  await database.query('VACUUM ANALYZE processed_messages');
  await database.query('CHECKPOINT');
  return round((performance.now() - started) / 1000, 1);
}

/** The consumer of round `r`'s expired rows. */
const expiredConsumer = (r: number) => `Seed.expired-${r}`;

/** Round `r`'s purge deleted exactly the expired rows: none is left, and every live seeded row is. */
async function expectEveryExpiredRowPurged(database: BenchDatabase, run: Omit<PurgeRun, 'startedAt'>, r: number): Promise<void> {
  const expired = await countProcessedMessages(database, expiredConsumer(r));
  const live = await countProcessedMessages(database, LIVE_CONSUMER);
  if (run.outcome !== 'purged' || run.rows !== EXPIRED_ROWS || expired !== 0 || live !== LIVE_ROWS) {
    throw new Error(
      `the purge ${run.outcome} ${run.rows} of ${EXPIRED_ROWS} expired rows, leaving ${expired} expired and ${live} of ${LIVE_ROWS} live seeded rows`,
    );
  }
}
