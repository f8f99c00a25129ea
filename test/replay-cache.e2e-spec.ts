import type { INestApplication } from '@nestjs/common';
import { IdempotencyAdmin, IdempotencyMetricsService, type IdempotencyModuleOptions } from 'nestjs-idempotent-consumer';
import { leaseGates, REPLAY_CACHE_TABLES_SQL, ReplayCacheFixtureModule } from './fixtures/replay-cache.module.js';
import { post, startDemoApp } from './support/demo-app.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const ORDERS = 'POST /replay-cache/orders/:id';
const CHARGES = 'POST /replay-cache/charges/:id';
/** Nothing in these apps waits long for a database that is not there. */
const OPTIONS: IdempotencyModuleOptions = { purge: { interval: false }, connectionTimeout: '2s', metrics: { storeSampleInterval: false } };

/**
 * The replay cache: a duplicate of a response this process committed or read is answered from its
 * memory, with no database round trip. The proof: the app reaches PostgreSQL through a proxy that
 * the test takes away, so any statement would fail (503), while a cached duplicate is still replayed.
 */
describe('Replay cache', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let app: INestApplication;
  let baseUrl: string;
  const others: INestApplication[] = [];

  const effects = async (handler: string, key: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM replay_cache_effects WHERE handler = $1 AND key = $2', [handler, key]))[0].n);
  const order = (url: string, id: string, amount = 10) => post(`${url}/replay-cache/orders/${id}`, { amount }, { 'Idempotency-Key': id });
  const charge = (url: string, id: string) => post(`${url}/replay-cache/charges/${id}`, {}, { 'Idempotency-Key': id });
  const duplicates = (of: INestApplication, consumer: string) =>
    of.get(IdempotencyMetricsService).deliveries().find((counts) => counts.consumer === consumer)?.duplicate ?? 0;
  /**
   * Runs `whileDown` with the database out of reach of the apps that go through the proxy: a
   * delivery that asks it fails, 503 (no connection) or 500 (a pooled connection cut under it).
   */
  const withDatabaseDown = async <T>(whileDown: () => Promise<T>): Promise<T> => {
    proxy.refuse();
    try {
      return await whileDown();
    } finally {
      proxy.accept();
    }
  };
  const startOther = async (databaseUrl: string, options: IdempotencyModuleOptions) => {
    const started = await startDemoApp('express', databaseUrl, [ReplayCacheFixtureModule], false, { ...OPTIONS, ...options });
    others.push(started.app);
    return started.baseUrl;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = TcpProxy.toDatabase(db.url);
    await proxy.start();
    ({ app, baseUrl } = await startDemoApp('express', proxy.url(db.url), [ReplayCacheFixtureModule], false, OPTIONS));
    await db.query(REPLAY_CACHE_TABLES_SQL);
  });

  afterAll(async () => {
    for (const other of others) await other.close();
    await app?.close();
    await proxy?.close();
    await db?.drop();
  });

  it('replays a duplicate of a committed response with the database out of reach: same status, body and headers, counted as a duplicate', async () => {
    const first = await order(baseUrl, 'o-1');
    expect(first.status).toBe(201);
    const counted = duplicates(app, ORDERS);
    const [replay, uncached] = await withDatabaseDown(async () => [await order(baseUrl, 'o-1'), await order(baseUrl, 'o-unseen')]);
    // The database was out of reach: a key the cache does not hold could not be claimed.
    expect(uncached.status).toBeGreaterThanOrEqual(500);
    expect(replay.status).toBe(201);
    expect(replay.body).toEqual(first.body);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('x-order-receipt')).toBe('receipt');
    expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(replay.headers.get('content-length')).toBe(first.headers.get('content-length'));
    expect(duplicates(app, ORDERS)).toBe(counted + 1);
    expect(await effects('order', 'o-1')).toBe(1);
    expect(await effects('order', 'o-unseen')).toBe(0);
  });

  it('refuses a reused key with another payload from the cache: 422', async () => {
    await order(baseUrl, 'o-2', 10);
    const reused = await withDatabaseDown(() => order(baseUrl, 'o-2', 99));
    expect(reused.status).toBe(422);
    expect(await effects('order', 'o-2')).toBe(1);
  });

  it("runs a key forgotten through this process's IdempotencyAdmin again on its next delivery", async () => {
    await order(baseUrl, 'o-3');
    expect((await order(baseUrl, 'o-3')).headers.get('idempotent-replayed')).toBe('true');
    const admin = app.get(IdempotencyAdmin);
    expect(await admin.forget({ consumer: ORDERS, key: 'o-3', reason: 'wrong answer recorded' })).toEqual({ state: 'processed', forgotten: true });
    const again = await order(baseUrl, 'o-3');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(await effects('order', 'o-3')).toBe(2);
  });

  it('replays a row deleted by SQL until evictCached() drops it in this process (the cache is per process)', async () => {
    await order(baseUrl, 'o-4');
    await db.query(`DELETE FROM processed_messages WHERE consumer = $1 AND message_id = 'o-4'`, [ORDERS]);
    expect((await order(baseUrl, 'o-4')).headers.get('idempotent-replayed')).toBe('true');
    expect(await effects('order', 'o-4')).toBe(1);
    const admin = app.get(IdempotencyAdmin);
    expect(admin.evictCached({ consumer: ORDERS, key: 'o-4', actor: 'ops' })).toBe(true);
    expect(admin.evictCached({ consumer: ORDERS, key: 'o-4', actor: 'ops' })).toBe(false);
    const again = await order(baseUrl, 'o-4');
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(await effects('order', 'o-4')).toBe(2);
  });

  it("keeps a twin's record read from the database, committed by another instance, and replays it from there next", async () => {
    const otherUrl = await startOther(db.url, {});
    const first = await order(otherUrl, 'o-5');
    expect(first.status).toBe(201);
    const read = await order(baseUrl, 'o-5');
    expect(read.headers.get('idempotent-replayed')).toBe('true');
    const replay = await withDatabaseDown(() => order(baseUrl, 'o-5'));
    expect(replay.status).toBe(201);
    expect(replay.body).toEqual(first.body);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await effects('order', 'o-5')).toBe(1);
  });

  it('lease mode: never answers a twin whose lease is held from the cache; once completed, replays it from there', async () => {
    let open!: () => void;
    leaseGates.set('c-1', new Promise<void>((resolve) => (open = resolve)));
    const first = charge(baseUrl, 'c-1');
    await until(
      async () => (await db.query(`SELECT 1 FROM processed_messages WHERE consumer = $1 AND message_id = 'c-1' AND lease_token IS NOT NULL`, [CHARGES])).length === 1,
      'the first delivery holds the lease',
    );
    expect((await charge(baseUrl, 'c-1')).status).toBe(409);
    const inFlight = await withDatabaseDown(() => charge(baseUrl, 'c-1'));
    // Not from the cache: the lease store was asked, and was out of reach.
    expect(inFlight.status).toBeGreaterThanOrEqual(500);
    expect(inFlight.headers.get('idempotent-replayed')).toBeNull();
    open();
    expect((await first).status).toBe(201);
    // The outage above emptied the cache, and a lease taken before it is not kept: the store answers.
    const afterOutage = await withDatabaseDown(() => charge(baseUrl, 'c-1'));
    expect(afterOutage.status).toBe(503);
    expect(await effects('charge', 'c-1')).toBe(1);

    const completed = await charge(baseUrl, 'c-2');
    expect(completed.status).toBe(201);
    const replay = await withDatabaseDown(() => charge(baseUrl, 'c-2'));
    expect(replay.status).toBe(201);
    expect(replay.body).toEqual(completed.body);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await effects('charge', 'c-2')).toBe(1);
  });

  it('forgets what it cached once a delivery finds the database unavailable: a commit that the database answering next lacks (a failover to an asynchronous replica) is processed again', async () => {
    expect((await order(baseUrl, 'o-7')).status).toBe(201);
    expect((await order(baseUrl, 'o-7')).headers.get('idempotent-replayed')).toBe('true');
    // The database that answers after the outage lacks that commit: its claim and its effect.
    await db.query(`DELETE FROM processed_messages WHERE consumer = $1 AND message_id = 'o-7'`, [ORDERS]);
    await db.query(`DELETE FROM replay_cache_effects WHERE handler = 'order' AND key = 'o-7'`);
    expect((await withDatabaseDown(() => order(baseUrl, 'o-unseen-7'))).status).toBe(503);
    const again = await order(baseUrl, 'o-7');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(await effects('order', 'o-7')).toBe(1);
  });

  it('with replayCache: false, every duplicate reads the database', async () => {
    const offUrl = await startOther(proxy.url(db.url), { replayCache: false });
    await order(offUrl, 'o-6');
    expect((await order(offUrl, 'o-6')).headers.get('idempotent-replayed')).toBe('true');
    const offline = await withDatabaseDown(() => order(offUrl, 'o-6'));
    expect(offline.status).toBeGreaterThanOrEqual(500);
    expect(offline.headers.get('idempotent-replayed')).toBeNull();
    expect(await effects('order', 'o-6')).toBe(1);
  });
});
