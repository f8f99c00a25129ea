import type { INestApplication } from '@nestjs/common';
import {
  IdempotencyHealthIndicator,
  IdempotencyMetricsService,
  IdempotencyPurgeError,
  IdempotencyPurgeService,
  type PurgeRun,
} from 'nestjs-idempotent-consumer';
import { post, startDemoApp } from './support/demo-app.js';
import { measureUntil, summarize } from './support/latency.js';
import { countProcessedMessages, purgeBatchStatement, seedProcessedMessages } from './support/processed-messages.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const EXPIRED = 1_000_000;
const UNEXPIRED = 50_000;
const CLAIM_CONCURRENCY = 4;
/** The purge lock of processed_messages, taken as another instance's batch holds it (to the end of its transaction). */
const PURGE_LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtext('idempotency.purge'), hashtext('processed_messages'))`;

describe('the purge of 1,000,000 expired ids while claims run', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  let claims = 0;
  /** A batch of the purge as the demo's module sends it, read in a first run on the empty table (the second run is the one measured). */
  let purgeBatch: string;

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
    purgeBatch = await purgeBatchStatement(db, app.get(IdempotencyPurgeService));
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
    const plan = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${purgeBatch}`);
    const text = plan.map((line) => line['QUERY PLAN']).join('\n');
    expect(text).toMatch(/Index Scan using processed_messages_expires_at_idx/);
    expect(text).toMatch(/Tid Scan/);
    expect(text).not.toMatch(/Seq Scan/);
    // The purge lock gates the index scan: a one-time filter, evaluated before the first row is read.
    expect(text).toMatch(/One-Time Filter: .*\n\s+->\s+Index Scan using processed_messages_expires_at_idx/);
  });

  it('takes the purge lock before it reads a row: a batch that finds it held never scans the index', async () => {
    const holder = await db.connect();
    const explainer = await db.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(PURGE_LOCK_SQL);
      await explainer.query('BEGIN');
      const plan = await explainer.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${purgeBatch}`,
      );
      const text = plan.rows.map((line) => line['QUERY PLAN']).join('\n');
      expect(text).toMatch(/Index Scan using processed_messages_expires_at_idx .*\(never executed\)/);
    } finally {
      await explainer.query('ROLLBACK');
      await holder.query('COMMIT');
      await Promise.all([explainer.end(), holder.end()]);
    }
  });

  it('deletes every expired row and no unexpired one, while claims keep succeeding', async () => {
    const purge = app.get(IdempotencyPurgeService);
    let finished = false;
    let stopBaseline = false;
    const baseline = await Promise.all([
      measureUntil(claim, () => stopBaseline, CLAIM_CONCURRENCY),
      until(async () => claims >= 400, '400 claims without a purge', 120_000).then(() => (stopBaseline = true)),
    ]).then(([latencies]) => latencies);

    const claimsBefore = claims;
    const running = purge.purgeNow().finally(() => (finished = true));
    const during = await measureUntil(claim, () => finished, CLAIM_CONCURRENCY);
    const run: PurgeRun = await running;

    expect(run).toMatchObject({ outcome: 'purged', rows: EXPIRED });
    expect(run.batches).toBe(EXPIRED / 5000 + 1);
    expect(await countProcessedMessages(db, 'Seed.expired')).toBe(0);
    expect(await countProcessedMessages(db, 'Seed.unexpired')).toBe(UNEXPIRED);
    expect(await countProcessedMessages(db, 'POST /credits')).toBe(claims);
    expect(claims - claimsBefore).toBe(during.length);
    expect(app.get(IdempotencyMetricsService).purge()).toMatchObject({ runs: { purged: 2, skipped: 0, failed: 0 }, rows: EXPIRED });
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
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
    );
  const purgeLocks = () =>
    db.query<{ pid: number }>(
      `SELECT pid FROM pg_locks
       WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
         AND classid = hashtext('idempotency.purge')::oid AND objid = hashtext('processed_messages')::oid AND objsubid = 2`,
    );

  /** Holds a table lock that blocks the purge's next batch before it runs (before it takes the purge lock). */
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

  it("a run whose first batch finds another instance's batch holding the purge lock is skipped, and deletes nothing", async () => {
    await seedProcessedMessages(db, { count: 20_000, consumer: 'Cluster.locked', expired: true });
    await seedProcessedMessages(db, { count: 10_000, consumer: 'Cluster.unexpired', expired: false });
    const holder = await db.connect();
    await holder.query('BEGIN');
    await holder.query(PURGE_LOCK_SQL);
    const runs = await Promise.all(purgers().map((purge) => purge.purgeNow()));
    expect(runs).toMatchObject([
      { outcome: 'skipped', rows: 0, batches: 0 },
      { outcome: 'skipped', rows: 0, batches: 0 },
    ]);
    expect(await countProcessedMessages(db, 'Cluster.locked')).toBe(20_000);
    await holder.query('COMMIT');
    await holder.end();

    expect(await purgers()[0].purgeNow()).toMatchObject({ outcome: 'purged', rows: 20_000 });
    expect(await countProcessedMessages(db, 'Cluster.locked')).toBe(0);
    expect(await countProcessedMessages(db, 'Cluster.unexpired')).toBe(10_000);
  });

  it('started together, they end without deadlock, each reports its outcome, and every row goes exactly once', async () => {
    await seedProcessedMessages(db, { count: 200_000, consumer: 'Cluster.together', expired: true });
    const results = await Promise.all(purgers().map((purge) => purge.purgeNow()));
    for (const [i, run] of results.entries()) {
      expect(['purged', 'skipped']).toContain(run.outcome);
      expect(apps[i].get(IdempotencyMetricsService).purge().lastRun).toEqual(run);
    }
    expect(results.map((run) => run.outcome)).toContain('purged');
    expect(results.reduce((rows, run) => rows + run.rows, 0)).toBe(200_000);
    expect(await countProcessedMessages(db, 'Cluster.together')).toBe(0);
    expect(await countProcessedMessages(db, 'Cluster.unexpired')).toBe(10_000);
    expect(await purgeLocks()).toEqual([]);
    console.log(`purge e2e: two instances started together: ${results.map((run) => `${run.outcome} ${run.rows} rows in ${run.batches} batches`).join(', ')}`);
  });

  it('a run that loses the purge lock between two batches ends with what it purged, and the other carries on', async () => {
    await seedProcessedMessages(db, { count: 20_000, consumer: 'Cluster.taken', expired: true });
    const [first, second] = purgers();
    const holder = await blockDeletes();
    const running = first.purgeNow();
    await until(async () => (await waitingOnLock()).length === 1, "the first batch waits for the holder's table lock");
    // Queued behind the first batch, this transaction takes the table right after that batch commits,
    // and with it the purge lock (as another instance's batch would) before the second batch can run.
    const taker = await db.connect();
    const taking = taker.query(
      `BEGIN; LOCK TABLE processed_messages IN SHARE ROW EXCLUSIVE MODE;
       SELECT pg_advisory_lock(hashtext('idempotency.purge'), hashtext('processed_messages')); COMMIT`,
    );
    await until(async () => (await waitingOnLock()).length === 2, 'the taker queues behind the first batch');
    await holder.query('COMMIT');
    await holder.end();
    await taking;

    expect(await running).toMatchObject({ outcome: 'purged', rows: 5000, batches: 1 });
    expect(await countProcessedMessages(db, 'Cluster.taken')).toBe(15_000);
    expect(await second.purgeNow()).toMatchObject({ outcome: 'skipped', rows: 0 });
    await taker.query(`SELECT pg_advisory_unlock(hashtext('idempotency.purge'), hashtext('processed_messages'))`);
    await taker.end();
    expect(await second.purgeNow()).toMatchObject({ outcome: 'purged', rows: 15_000 });
    expect(await countProcessedMessages(db, 'Cluster.taken')).toBe(0);
  });

  it('a purging instance whose connection dies fails its run, leaves no lock, and the other takes over', async () => {
    await seedProcessedMessages(db, { count: 20_000, consumer: 'Cluster.orphaned', expired: true });
    const holder = await blockDeletes();
    const [dying, survivor] = purgers();
    const failing = expect(dying.purgeNow()).rejects.toThrow(IdempotencyPurgeError);
    await until(async () => (await waitingOnLock()).length === 1, 'the purge waits to delete');
    const [{ pid }] = await waitingOnLock();
    await db.query('SELECT pg_terminate_backend($1)', [pid]);
    await failing;
    await holder.query('COMMIT');
    await holder.end();

    expect(await purgeLocks()).toEqual([]);
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
