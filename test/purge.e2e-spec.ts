import type { INestApplication } from '@nestjs/common';
import {
  IdempotencyHealthIndicator,
  IdempotencyMetricsService,
  IdempotencyPurgeError,
  IdempotencyPurgeService,
  type PurgeRun,
} from 'nestjs-idempotent-consumer';
import { purgeBatchSql } from '../libs/idempotency/src/purge/purge.queries.js';
import { post, startDemoApp } from './support/demo-app.js';
import { measureUntil, summarize } from './support/latency.js';
import { countProcessedMessages, seedProcessedMessages } from './support/processed-messages.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const EXPIRED = 1_000_000;
const UNEXPIRED = 50_000;
const CLAIM_CONCURRENCY = 4;

describe('the purge of 1,000,000 expired ids while claims run', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  let claims = 0;

  /** One new credit with a new key; fails the test unless it is processed (201). */
  async function claim(): Promise<void> {
    const key = `during-purge-${++claims}`;
    const answer = await post(`${baseUrl}/credits`, { account: `acc-${claims % 16}`, cents: 1 }, { 'Idempotency-Key': key });
    if (answer.status !== 201 || answer.headers.get('idempotent-replayed') !== null) {
      throw new Error(`claim ${key} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [], false, { purge: { interval: false } }));
    const seeding = performance.now();
    await seedProcessedMessages(db, { count: EXPIRED, consumer: 'Seed.expired', expired: true });
    await seedProcessedMessages(db, { count: UNEXPIRED, consumer: 'Seed.unexpired', expired: false });
    // Vacuumed now, so that autovacuum does not run through the new rows while latency is measured.
    await db.query('VACUUM ANALYZE processed_messages');
    console.log(`purge e2e: seeded ${EXPIRED} expired and ${UNEXPIRED} unexpired rows in ${Math.round(performance.now() - seeding)} ms`);
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('selects each batch through the index on expires_at, never by scanning the table', async () => {
    const plan = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${purgeBatchSql('processed_messages', 5000)}`);
    const text = plan.map((line) => line['QUERY PLAN']).join('\n');
    expect(text).toMatch(/Index Scan using processed_messages_expires_at_idx/);
    expect(text).toMatch(/Tid Scan/);
    expect(text).not.toMatch(/Seq Scan/);
  });

  it('deletes every expired row and no unexpired one, while claims keep succeeding', async () => {
    const purge = app.get(IdempotencyPurgeService);
    let finished = false;
    let stopBaseline = false;
    const baseline = await Promise.all([
      measureUntil(claim, () => stopBaseline, CLAIM_CONCURRENCY),
      until(async () => claims >= 400, '400 claims without a purge').then(() => (stopBaseline = true)),
    ]).then(([latencies]) => latencies);

    const claimsBefore = claims;
    const running = purge.purgeNow().finally(() => (finished = true));
    const during = await measureUntil(claim, () => finished, CLAIM_CONCURRENCY);
    const run: PurgeRun = await running;

    expect(run).toMatchObject({ outcome: 'purged', rows: EXPIRED });
    expect(run.batches).toBe(EXPIRED / 5000 + 1);
    expect(await countProcessedMessages(db, 'Seed.expired')).toBe(0);
    expect(await countProcessedMessages(db, 'Seed.unexpired')).toBe(UNEXPIRED);
    expect(await countProcessedMessages(db, 'CreditsController.grant')).toBe(claims);
    expect(claims - claimsBefore).toBe(during.length);
    expect(app.get(IdempotencyMetricsService).purge()).toMatchObject({ runs: { purged: 1, skipped: 0, failed: 0 }, rows: EXPIRED });
    const checking = performance.now();
    expect((await app.get(IdempotencyHealthIndicator).isHealthy()).idempotency.status).toBe('up');
    const healthAfterPurgeMs = performance.now() - checking;

    console.log(
      [
        `purge e2e: ${run.rows} rows in ${run.batches} batches, ${run.durationMs} ms = ${Math.round(run.rows / (run.durationMs / 1000))} rows/s`,
        `  claim latency without purge (${CLAIM_CONCURRENCY} concurrent): ${summarize(baseline)}`,
        `  claim latency during purge  (${CLAIM_CONCURRENCY} concurrent): ${summarize(during)}`,
        `  health check right after the purge (1M dead index entries): ${healthAfterPurgeMs.toFixed(1)} ms`,
      ].join('\n'),
    );
  });
});

describe('two instances purging at once', () => {
  let db: TestDatabase;
  let apps: INestApplication[];
  const purgers = () => apps.map((app) => app.get(IdempotencyPurgeService));
  const waitingOnLock = async () =>
    db.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%DELETE%'`,
    );

  /** Holds a lock that lets the purge take its advisory lock but blocks its first DELETE. */
  async function blockDeletes() {
    const holder = await db.connect();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE processed_messages IN SHARE MODE');
    return holder;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    apps = [];
    for (let i = 0; i < 2; i++) {
      apps.push((await startDemoApp('express', db.url, [], false, { purge: { interval: false } })).app);
    }
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await db?.drop();
  });

  it('one does the work, the other skips, and every expired row goes exactly once', async () => {
    await seedProcessedMessages(db, { count: 200_000, consumer: 'Cluster.expired', expired: true });
    await seedProcessedMessages(db, { count: 10_000, consumer: 'Cluster.unexpired', expired: false });
    const holder = await blockDeletes();
    const runs = purgers().map((purge) => purge.purgeNow());
    const first = await Promise.race(runs);
    expect(first).toMatchObject({ outcome: 'skipped', rows: 0, batches: 0 });
    await until(async () => (await waitingOnLock()).length === 1, 'the lock holder waits to delete');
    await holder.query('COMMIT');
    await holder.end();

    const results = await Promise.all(runs);
    expect(results.map((run) => run.outcome).sort()).toEqual(['purged', 'skipped']);
    expect(results.find((run) => run.outcome === 'purged')?.rows).toBe(200_000);
    expect(await countProcessedMessages(db, 'Cluster.expired')).toBe(0);
    expect(await countProcessedMessages(db, 'Cluster.unexpired')).toBe(10_000);
  });

  it('started together without a blocker, they end without deadlock and delete each row once between them', async () => {
    await seedProcessedMessages(db, { count: 200_000, consumer: 'Cluster.together', expired: true });
    const results = await Promise.all(purgers().map((purge) => purge.purgeNow()));
    expect(results.map((run) => run.outcome)).toContain('purged');
    expect(results.map((run) => run.outcome)).not.toContain('failed');
    expect(results.reduce((rows, run) => rows + run.rows, 0)).toBe(200_000);
    expect(await countProcessedMessages(db, 'Cluster.together')).toBe(0);
    expect(await countProcessedMessages(db, 'Cluster.unexpired')).toBe(10_000);
  });

  it('a purging instance whose connection dies releases the lock, and the other takes over', async () => {
    await seedProcessedMessages(db, { count: 20_000, consumer: 'Cluster.orphaned', expired: true });
    const holder = await blockDeletes();
    const [dying, survivor] = purgers();
    const failing = expect(dying.purgeNow()).rejects.toThrow(IdempotencyPurgeError);
    const [{ pid }] = await (async () => {
      await until(async () => (await waitingOnLock()).length === 1, 'the purge waits to delete');
      return waitingOnLock();
    })();
    await db.query('SELECT pg_terminate_backend($1)', [pid]);
    await failing;
    await holder.query('COMMIT');
    await holder.end();

    expect(await survivor.purgeNow()).toMatchObject({ outcome: 'purged', rows: 20_000 });
    expect(await countProcessedMessages(db, 'Cluster.orphaned')).toBe(0);
    expect(await dying.purgeNow()).toMatchObject({ outcome: 'purged', rows: 0 });
  });
});

describe('the purge timer', () => {
  let db: TestDatabase;
  let app: INestApplication;

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app } = await startDemoApp('express', db.url, [], false, { purge: { interval: '200ms' } }));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('purges every interval from bootstrap', async () => {
    await seedProcessedMessages(db, { count: 1000, consumer: 'Timer.expired', expired: true });
    await seedProcessedMessages(db, { count: 1000, consumer: 'Timer.unexpired', expired: false });
    await until(async () => (await countProcessedMessages(db, 'Timer.expired')) === 0, 'the timer purged the expired rows');
    expect(await countProcessedMessages(db, 'Timer.unexpired')).toBe(1000);
    const figures = app.get(IdempotencyMetricsService).purge();
    expect(figures.rows).toBe(1000);
    expect(figures.runs.failed).toBe(0);
    expect(figures.lastSuccessAt).toBeInstanceOf(Date);
  });
});
