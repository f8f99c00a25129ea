import type { INestApplication } from '@nestjs/common';
import { IdempotencyMetricsService, type IdempotencyModuleOptions } from 'nestjs-idempotent-consumer';
import { GATE_LOCK, POOL_SHAPES_TABLES_SQL, PoolShapesModule } from './fixtures/pool-shapes.module.js';
import { post, startDemoApp } from './support/demo-app.js';
import { type PgBouncer, pgBouncerAvailable, startPgBouncer } from './support/pgbouncer.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const ROUTES = [
  { route: 'straight to PostgreSQL', behindPgBouncer: false },
  ...(pgBouncerAvailable() ? [{ route: 'behind PgBouncer in transaction mode', behindPgBouncer: true }] : []),
];

/**
 * Small pools under load: no request waits forever, waiting twins hold no connection, and an
 * exhausted pool is answered 503 with Retry-After, counted as unavailable. Effects are read on
 * PostgreSQL itself.
 */
describe.each(ROUTES)('idempotent handlers on a small connection pool, $route', ({ behindPgBouncer }) => {
  let db: TestDatabase;
  let bouncer: PgBouncer | undefined;
  let app: INestApplication | undefined;
  let baseUrl: string;

  const count = async (sql: string, params: unknown[] = []) => Number((await db.query<{ n: string }>(sql, params))[0].n);
  const effects = (key: string) => count(`SELECT count(*) AS n FROM effects WHERE key = $1`, [key]);
  /** Backends of the app waiting at the gate of `POST /pool/gated/:id`, i.e. handlers in the middle of their work. */
  const atTheGate = () =>
    count(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'advisory' AND query LIKE 'SELECT pg_advisory_xact_lock%'`);
  /** Backends waiting on a lock other than the gate: a twin waiting inside the database, holding its connection. */
  const waitingOnLocks = () =>
    count(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event <> 'advisory'`);

  async function start(poolSize: number, idempotency: IdempotencyModuleOptions = {}) {
    ({ app, baseUrl } = await startDemoApp('express', bouncer?.url ?? db.url, [PoolShapesModule], false, { purge: { interval: false }, ...idempotency }, poolSize));
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    bouncer = behindPgBouncer ? await startPgBouncer(db.url) : undefined;
    await start(2);
    await db.query(POOL_SHAPES_TABLES_SQL);
    await app!.close();
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  afterAll(async () => {
    await bouncer?.stop();
    await db?.drop();
  });

  it('answers 20 concurrent first deliveries on a pool of 10, though each reads through an injected repository', async () => {
    await start(10);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(`${baseUrl}/pool/slow/200/first-${i}`, {}, { 'Idempotency-Key': `first-${i}` })));
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(201));
    expect(await count(`SELECT count(*) AS n FROM effects WHERE key LIKE 'first-%'`)).toBe(20);
  });

  it('keeps waiting twins off the pool: 40 duplicates of a slow delivery wait without a connection while unrelated requests answer', async () => {
    // The 39 twins then read the committed record on the pool's 4 connections at once: on a loaded
    // machine that takes longer than the default connectionTimeout (5 s), which is not what this checks.
    await start(4, { connectionTimeout: '60s' });
    const key = 'storm';
    // The first delivery works until the gate opens: held here, on a connection of the test's own.
    const gate = await db.connect();
    await gate.query('SELECT pg_advisory_lock($1)', [GATE_LOCK]);
    const storm = Promise.all(Array.from({ length: 40 }, () => post(`${baseUrl}/pool/gated/${key}`, {}, { 'Idempotency-Key': key })));
    try {
      await until(async () => (await atTheGate()) === 1, 'the first delivery is at work');
      const unrelated = await Promise.all(Array.from({ length: 20 }, () => fetch(`${baseUrl}/pool/unrelated`).then((response) => response.status)));
      expect(unrelated).toEqual(Array(20).fill(200));
      // All answered while the first delivery still works, and none of its twins waits inside the database.
      expect(await atTheGate()).toBe(1);
      expect(await waitingOnLocks()).toBe(0);
    } finally {
      // The session's end releases its advisory lock: the gate opens.
      await gate.end();
    }
    const answers = await storm;
    expect(answers.map((answer) => answer.status)).toEqual(Array(40).fill(201));
    expect(answers.filter((answer) => answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(await effects(key)).toBe(1);
  });

  it('answers a delivery that gets no connection within connectionTimeout 503 with Retry-After, counts it unavailable, and nothing is claimed', async () => {
    await start(2, { connectionTimeout: '300ms' });
    const gate = await db.connect();
    await gate.query('SELECT pg_advisory_lock($1)', [GATE_LOCK]);
    const holders = [0, 1].map((i) => post(`${baseUrl}/pool/gated/holder-${i}`, {}, { 'Idempotency-Key': `holder-${i}` }));
    try {
      await until(async () => (await atTheGate()) === 2, 'both connections of the pool are at work');
      const refused = await post(`${baseUrl}/pool/slow/10/starved`, {}, { 'Idempotency-Key': 'starved' });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.body).toMatchObject({ type: 'urn:idempotency:unavailable', detail: expect.stringContaining('all 2 connections of the pool were busy') });
    } finally {
      await gate.end();
    }
    expect((await Promise.all(holders)).map((answer) => answer.status)).toEqual([201, 201]);
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'starved'`)).toBe(0);
    expect(app!.get(IdempotencyMetricsService).deliveries()).toContainEqual(expect.objectContaining({ consumer: 'POST /pool/slow/:ms/:id', unavailable: 1 }));
    expect((await post(`${baseUrl}/pool/slow/10/starved`, {}, { 'Idempotency-Key': 'starved' })).status).toBe(201);
    expect(await effects('starved')).toBe(1);
  });
});
