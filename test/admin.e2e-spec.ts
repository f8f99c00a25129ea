import type { INestApplication } from '@nestjs/common';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdempotencyAdmin, IdempotencyAdminError, IdempotencyAdminModule, IdempotencyMetricsService, RedisLeaseStore } from 'nestjs-idempotent-consumer';
import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { ADMIN_TABLES_SQL, AdminFixtureModule } from './fixtures/admin.module.js';
import { REDIS_URL, redisAvailable } from './support/brokers.js';
import { CapturingLogger } from './support/capturing-logger.js';
import { post, startDemoApp } from './support/demo-app.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

const GRANTS = 'POST /admin-fixture/grants/:id';
const CHARGES = 'POST /admin-fixture/charges/:id';
const REDIS_CHARGES = 'POST /admin-fixture/redis-charges/:id';
const describeWithRedis = (await redisAvailable()) ? describe : describe.skip;

/**
 * The admin API on stuck and wrong work: what it reads is what the store holds, what it forgets
 * runs again, what it releases is taken by the next delivery, and each call leaves an audit line.
 */
describeWithRedis('IdempotencyAdmin, on PostgreSQL and on the Redis lease store', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  let admin: IdempotencyAdmin;
  let logger: CapturingLogger;
  let redis: ReturnType<typeof createClient>;
  let redisStore: RedisLeaseStore;

  const effects = async (handler: string, key: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM admin_effects WHERE handler = $1 AND key = $2', [handler, key]))[0].n);
  const grant = (id: string, user: string) => post(`${baseUrl}/admin-fixture/grants/${id}`, {}, { 'Idempotency-Key': id, 'x-user': user });
  const charge = (id: string) => post(`${baseUrl}/admin-fixture/charges/${id}`, {}, { 'Idempotency-Key': id });
  const redisCharge = (id: string) => post(`${baseUrl}/admin-fixture/redis-charges/${id}`, {}, { 'Idempotency-Key': id });
  const audits = () => logger.lines.filter((line) => line.startsWith('LOG Admin '));

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = createClient({ url: REDIS_URL });
    await redis.connect();
    redisStore = new RedisLeaseStore(redis, `idempotency-admin-${process.pid}-${randomUUID()}:`);
    logger = new CapturingLogger();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [AdminFixtureModule], logger, { purge: { interval: false }, stores: { redis: redisStore } }));
    await db.query(ADMIN_TABLES_SQL);
    admin = app.get(IdempotencyAdmin);
  });

  afterAll(async () => {
    await app?.close();
    await redis?.close();
    await db?.drop();
  });

  it('looks up a processed key of a scoped handler: its state, sender, times and response size, the body only when asked', async () => {
    const answer = await grant('g-1', 'alice');
    expect(answer.status).toBe(201);
    const record = await admin.lookup({ consumer: GRANTS, key: 'g-1', scope: 'alice', actor: 'ops@example.com' });
    const [row] = await db.query<{ n: number }>(`SELECT octet_length(response_body) AS n FROM processed_messages WHERE consumer = $1`, [GRANTS]);
    expect(record).toMatchObject({
      state: 'processed',
      consumer: GRANTS,
      sender: 'default',
      processedAt: expect.any(Date),
      expiresAt: expect.any(Date),
      leaseToken: null,
      responseStatus: 201,
      responseBytes: row.n,
    });
    expect(record.messageId.endsWith('\u001fg-1')).toBe(true);
    expect(record).not.toHaveProperty('responseBody');
    const withBody = await admin.lookup({ consumer: GRANTS, key: 'g-1', scope: 'alice', includeBody: true });
    expect(JSON.parse(withBody.responseBody!.toString('utf8'))).toEqual(answer.body);
    // Another user's view of the same key, and an unknown key.
    expect((await admin.lookup({ consumer: GRANTS, key: 'g-1', scope: 'bob' })).state).toBe('not-found');
    expect((await admin.lookup({ consumer: GRANTS, key: 'g-1' })).state).toBe('not-found');
    expect(audits()).toContainEqual(`LOG Admin lookup of 'g-1' (scoped to its caller) for ${GRANTS} by ops@example.com: processed.`);
  });

  it('forgets a processed key with a reason, so the next delivery runs the handler again; counted and audited', async () => {
    await grant('g-2', 'alice');
    expect((await grant('g-2', 'alice')).headers.get('idempotent-replayed')).toBe('true');
    expect(await effects('grant', 'g-2')).toBe(1);
    await expect(admin.forget({ consumer: GRANTS, key: 'g-2', scope: 'alice', reason: ' ' })).rejects.toThrow(IdempotencyAdminError);
    const result = await admin.forget({ consumer: GRANTS, key: 'g-2', scope: 'alice', reason: 'INC-42: wrong price recorded', actor: 'ops@example.com' });
    expect(result).toEqual({ state: 'processed', forgotten: true });
    const again = await grant('g-2', 'alice');
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(await effects('grant', 'g-2')).toBe(2);
    expect(app.get(IdempotencyMetricsService).adminActions()).toContainEqual({ consumer: GRANTS, forget: 1, release: 0 });
    expect(audits()).toContainEqual(
      `LOG Admin forget of 'g-2' (scoped to its caller) for ${GRANTS} by ops@example.com (reason: INC-42: wrong price recorded): forgotten (was processed).`,
    );
    expect(await admin.forget({ consumer: GRANTS, key: 'g-missing', scope: 'alice', reason: 'tidy' })).toEqual({ state: 'not-found', forgotten: false });
  });

  it('reads a crashed holder\'s live lease, refuses to forget it without force, releases it, and the next delivery takes it', async () => {
    // What a delivery whose process died leaves: a lease row that holds for an hour.
    const token = randomUUID();
    await db.query(
      `INSERT INTO processed_messages (consumer, message_id, sender, expires_at, lease_token, lease_expires_at)
       VALUES ($1, 'c-1', 'default', now() + interval '7 days', $2, now() + interval '1 hour')`,
      [CHARGES, token],
    );
    expect((await charge('c-1')).status).toBe(409);
    const record = await admin.lookup({ consumer: CHARGES, key: 'c-1' });
    expect(record).toMatchObject({ state: 'leased', leaseToken: token, leaseExpiresAt: expect.any(Date), responseBytes: null });
    await expect(admin.forget({ consumer: CHARGES, key: 'c-1', reason: 'stuck' })).rejects.toThrow('is leased until');
    expect(await admin.release({ consumer: CHARGES, key: 'c-1', token: randomUUID(), reason: 'stuck' })).toBe(false);
    expect(await admin.release({ consumer: CHARGES, key: 'c-1', token, reason: 'holder crashed', actor: 'ops' })).toBe(true);
    expect((await admin.lookup({ consumer: CHARGES, key: 'c-1' })).state).toBe('not-found');
    expect((await charge('c-1')).status).toBe(201);
    expect(await effects('charge', 'c-1')).toBe(1);
    expect((await admin.lookup({ consumer: CHARGES, key: 'c-1' })).state).toBe('processed');
    expect(audits()).toContainEqual(`LOG Admin release of 'c-1' for ${CHARGES} by ops (reason: holder crashed): released.`);
  });

  it('tells an expired lease apart, and forgets it without force', async () => {
    await db.query(
      `INSERT INTO processed_messages (consumer, message_id, sender, expires_at, lease_token, lease_expires_at)
       VALUES ($1, 'c-2', 'default', now() + interval '7 days', $2, now() - interval '1 minute')`,
      [CHARGES, randomUUID()],
    );
    expect((await admin.lookup({ consumer: CHARGES, key: 'c-2' })).state).toBe('lease-expired');
    expect(await admin.forget({ consumer: CHARGES, key: 'c-2', reason: 'expired lease' })).toEqual({ state: 'lease-expired', forgotten: true });
  });

  it('lists the newest records of a consumer, newest first, bounded', async () => {
    for (const id of ['l-1', 'l-2', 'l-3']) {
      await charge(id);
    }
    const newest = await admin.list({ consumer: CHARGES, limit: 2, actor: 'ops' });
    expect(newest.map((record) => record.messageId)).toEqual(['l-3', 'l-2']);
    expect(newest[0]).not.toHaveProperty('responseBody');
    const older = await admin.list({ consumer: CHARGES, limit: 2, before: newest[1].processedAt! });
    expect(older.map((record) => record.messageId)).toEqual(['l-1', 'c-1']);
    await expect(admin.list({ consumer: CHARGES, limit: 1001 })).rejects.toThrow(IdempotencyAdminError);
    expect(audits()).toContainEqual(`LOG Admin list for ${CHARGES} by ops: 2 records.`);
  });

  it('from a script context of IdempotencyAdminModule.forRootAsync() beside its own data source: reads and forgets on PostgreSQL and on Redis', async () => {
    await charge('s-1');
    await redisCharge('s-2');
    @Module({
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url: db.url, extra: { max: 2 } }),
        IdempotencyAdminModule.forRootAsync({ useFactory: () => ({ stores: { redis: redisStore } }) }),
      ],
    })
    class AdminScriptModule {}
    const script = await NestFactory.createApplicationContext(AdminScriptModule, { logger: false });
    try {
      const scriptAdmin = script.get(IdempotencyAdmin);
      expect(scriptAdmin).not.toBe(admin);
      expect(await scriptAdmin.lookup({ consumer: CHARGES, key: 's-1' })).toMatchObject({ state: 'processed', responseStatus: 201 });
      expect(await scriptAdmin.lookup({ consumer: REDIS_CHARGES, key: 's-2', store: 'redis' })).toMatchObject({ state: 'processed', responseStatus: 201 });
      expect(await scriptAdmin.forget({ consumer: CHARGES, key: 's-1', reason: 'rerun from a script' })).toEqual({ state: 'processed', forgotten: true });
    } finally {
      await script.close();
    }
    expect((await admin.lookup({ consumer: CHARGES, key: 's-1' })).state).toBe('not-found');
    // The script's forget dropped nothing from the service's replay cache: the service evicts it, as the guide says.
    expect((await charge('s-1')).headers.get('idempotent-replayed')).toBe('true');
    expect(admin.evictCached({ consumer: CHARGES, key: 's-1' })).toBe(true);
    expect((await charge('s-1')).headers.get('idempotent-replayed')).toBeNull();
    expect(await effects('charge', 's-1')).toBe(2);
  });

  it('IdempotencyAdminModule.forRoot() with no argument takes every default: the default data source and table', async () => {
    await charge('d-1');
    @Module({ imports: [TypeOrmModule.forRoot({ type: 'postgres', url: db.url, extra: { max: 2 } }), IdempotencyAdminModule.forRoot()] })
    class DefaultAdminScriptModule {}
    const script = await NestFactory.createApplicationContext(DefaultAdminScriptModule, { logger: false });
    try {
      expect(await script.get(IdempotencyAdmin).lookup({ consumer: CHARGES, key: 'd-1' })).toMatchObject({ state: 'processed', responseStatus: 201 });
    } finally {
      await script.close();
    }
  });

  it('on the Redis lease store: looks up, forgets so the next delivery runs again, and releases a held lease', async () => {
    const first = await redisCharge('r-1');
    expect(first.status).toBe(201);
    const record = await admin.lookup({ consumer: REDIS_CHARGES, key: 'r-1', store: 'redis', includeBody: true });
    expect(record).toMatchObject({ state: 'processed', responseStatus: 201, expiresAt: expect.any(Date), leaseToken: null });
    expect(JSON.parse(record.responseBody!.toString('utf8'))).toEqual(first.body);
    expect(await admin.forget({ consumer: REDIS_CHARGES, key: 'r-1', store: 'redis', reason: 'rerun' })).toEqual({ state: 'processed', forgotten: true });
    expect((await redisCharge('r-1')).headers.get('idempotent-replayed')).toBeNull();
    expect(await effects('redis-charge', 'r-1')).toBe(2);

    // A crashed holder's lease, taken through the store itself.
    const token = randomUUID();
    await redisStore.claim({ consumer: REDIS_CHARGES, key: 'r-2', sender: 'default', fingerprint: null, leaseMs: 3_600_000, retentionMs: 60_000 }, token);
    expect(await admin.lookup({ consumer: REDIS_CHARGES, key: 'r-2', store: 'redis' })).toMatchObject({ state: 'leased', leaseToken: token, leaseExpiresAt: expect.any(Date) });
    await expect(admin.forget({ consumer: REDIS_CHARGES, key: 'r-2', store: 'redis', reason: 'stuck' })).rejects.toThrow(IdempotencyAdminError);
    expect(await admin.release({ consumer: REDIS_CHARGES, key: 'r-2', store: 'redis', reason: 'holder crashed' })).toBe(true);
    expect((await redisCharge('r-2')).status).toBe(201);
    expect(await effects('redis-charge', 'r-2')).toBe(1);
    expect(app.get(IdempotencyMetricsService).adminActions()).toContainEqual({ consumer: REDIS_CHARGES, forget: 1, release: 1 });
  });
});
