import { Body, Controller, Header, HttpCode, type INestApplication, Module, Post, Res } from '@nestjs/common';
import { type AdminKeyRecord, IdempotencyAdmin, type IdempotencyModuleOptions, IdempotencyContext, IdempotentHandler, RedisLeaseStore } from 'nestjs-idempotent-consumer';
import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';
import { REDIS_URL, redisAvailable } from './support/brokers.js';
import { startDemoApp } from './support/demo-app.js';
import { postJson } from './support/post-json.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

/** Personal data in the answers: it must never be found in the store's bytes while encryption is on. */
const BODY_MARKER = 'MARKER-cardholder-Jane-Doe';
const HEADER_MARKER = 'MARKER-receipt-header';

/** The part of Express's response the handlers use to set a header of their own (recorded, unlike `@Header()`'s). */
interface HeaderSetter {
  setHeader(name: string, value: string): void;
}

/** Runs of each handler per key, counted in memory (lease-mode handlers write nothing to the database). */
const runs = new Map<string, number>();
const countRun = (route: string, id: string) => runs.set(`${route}:${id}`, (runs.get(`${route}:${id}`) ?? 0) + 1);
const runsOf = (route: string, id: string) => runs.get(`${route}:${id}`) ?? 0;

@Controller('sealed')
class SealedController {
  constructor(private readonly idempotency: IdempotencyContext) {}

  /** Transactional: writes an effect row in the claim's transaction, answers personal data and a header. */
  @Post('payments')
  @HttpCode(201)
  @IdempotentHandler()
  async pay(@Body() body: { id: string }, @Res({ passthrough: true }) response: HeaderSetter) {
    response.setHeader('x-receipt', HEADER_MARKER);
    countRun('payments', body.id);
    await this.idempotency.manager.query('INSERT INTO sealed_effects (key) VALUES ($1)', [body.id]);
    return { id: body.id, cardholder: BODY_MARKER, issued: Date.now(), nonce: randomBytes(8).toString('hex') };
  }

  /** A webhook whose provider reads the status alone: nothing but the status is kept. */
  @Post('webhook')
  @HttpCode(202)
  @Header('x-static', 'set-by-nest-before-the-handler')
  @IdempotentHandler({ key: { body: 'id' }, record: 'status' })
  async webhook(@Body() body: { id: string }, @Res({ passthrough: true }) response: HeaderSetter) {
    response.setHeader('x-receipt', HEADER_MARKER);
    countRun('webhook', body.id);
    return { received: body.id, cardholder: BODY_MARKER };
  }

  /** Lease mode on the PostgreSQL store. */
  @Post('lease-postgres')
  @IdempotentHandler({ mode: 'lease', store: 'postgres' })
  leasePostgres(@Body() body: { id: string }, @Res({ passthrough: true }) response: HeaderSetter) {
    response.setHeader('x-receipt', HEADER_MARKER);
    countRun('lease-postgres', body.id);
    return { id: body.id, cardholder: BODY_MARKER, nonce: randomBytes(8).toString('hex') };
  }

  /** Lease mode on the Redis store. */
  @Post('lease-redis')
  @IdempotentHandler({ mode: 'lease', store: 'redis' })
  leaseRedis(@Body() body: { id: string }, @Res({ passthrough: true }) response: HeaderSetter) {
    response.setHeader('x-receipt', HEADER_MARKER);
    countRun('lease-redis', body.id);
    return { id: body.id, cardholder: BODY_MARKER, nonce: randomBytes(8).toString('hex') };
  }
}

@Module({ controllers: [SealedController] })
class SealedModule {}

const k1 = randomBytes(32).toString('base64');
const k2 = randomBytes(32);

const describeWithRedis = (await redisAvailable()) ? describe : describe.skip;

describeWithRedis('recorded responses encrypted at rest', () => {
  let db: TestDatabase;
  const redis = createClient({ url: REDIS_URL });
  const prefix = `idempotency-encryption-e2e-${process.pid}:`;
  let app: INestApplication | undefined;
  let baseUrl: string;

  /** (Re)starts the app, as an operator does after changing the keys. */
  async function restart(options: Omit<IdempotencyModuleOptions, 'stores'>) {
    await app?.close();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [SealedModule], false, {
      purge: { interval: false },
      stores: { redis: new RedisLeaseStore(redis, prefix) },
      ...options,
    }));
  }

  const send = (route: string, id: string) => postJson(`${baseUrl}/sealed/${route}`, { id }, { 'Idempotency-Key': id });
  const stored = async (id: string) =>
    (
      await db.query<{ response_status: number | null; response_headers: unknown; response_body: Buffer | null; lease_token: string | null }>(
        'SELECT response_status, response_headers, response_body, lease_token FROM processed_messages WHERE message_id = $1',
        [id],
      )
    )[0];
  const effects = async (id: string) => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM sealed_effects WHERE key = $1', [id]))[0].n);
  /** The key id a sealed body names: marker 0, format 1, its length, then the id. */
  const keyIdOf = (body: Buffer) => {
    expect([body[0], body[1]]).toEqual([0, 1]);
    return body.subarray(3, 3 + body[2]).toString('utf8');
  };
  function expectSameAnswer(replay: Awaited<ReturnType<typeof postJson>>, first: Awaited<ReturnType<typeof postJson>>) {
    expect(replay.status).toBe(first.status);
    expect(replay.bytes.equals(first.bytes)).toBe(true);
    expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(replay.headers.get('x-receipt')).toBe(HEADER_MARKER);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  }
  function expectNoPlaintext(bytes: Buffer | string) {
    expect(bytes.includes(BODY_MARKER)).toBe(false);
    expect(bytes.includes(HEADER_MARKER)).toBe(false);
    expect(bytes.includes('cardholder')).toBe(false);
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    await redis.connect();
    await restart({});
    await db.query('CREATE TABLE sealed_effects (key text NOT NULL)');
  });

  afterAll(async () => {
    await app?.close();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) {
      await redis.del(keys);
    }
    await redis.close();
    await db?.drop();
  });

  it('walks a deployment through enabling encryption, rotating the key and losing the old one', async () => {
    // 1. Before encryption: a plaintext record.
    const plain = await send('payments', 'pay-plain');
    expect(plain.status).toBe(201);
    // What a plaintext record holds, and encryption must hide: the body's and the handler's header's markers.
    expect((await stored('pay-plain')).response_body?.includes(BODY_MARKER)).toBe(true);
    expect(JSON.stringify((await stored('pay-plain')).response_headers)).toContain(HEADER_MARKER);

    // 2. Encryption on with k1: the plaintext record still replays; a new record is sealed.
    await restart({ encryption: { keys: { k1 }, current: 'k1' } });
    expectSameAnswer(await send('payments', 'pay-plain'), plain);
    const first = await send('payments', 'pay-k1');
    expect(first.status).toBe(201);
    expect(first.json).toMatchObject({ id: 'pay-k1', cardholder: BODY_MARKER });
    const sealedK1 = await stored('pay-k1');
    expect(sealedK1.response_status).toBe(201);
    expect(sealedK1.response_headers).toBeNull();
    expectNoPlaintext(sealedK1.response_body as Buffer);
    expect(keyIdOf(sealedK1.response_body as Buffer)).toBe('k1');
    const replay = await send('payments', 'pay-k1');
    expectSameAnswer(replay, first);
    expect([runsOf('payments', 'pay-k1'), await effects('pay-k1')]).toEqual([1, 1]);

    // 3. Rotation: k2 added and made current, k1 kept. The k1 record replays; new ones are sealed with k2.
    await restart({ encryption: { keys: { k1, k2 }, current: 'k2' } });
    expectSameAnswer(await send('payments', 'pay-k1'), first);
    const second = await send('payments', 'pay-k2');
    expect(second.status).toBe(201);
    const sealedK2 = await stored('pay-k2');
    expectNoPlaintext(sealedK2.response_body as Buffer);
    expect(keyIdOf(sealedK2.response_body as Buffer)).toBe('k2');
    expectSameAnswer(await send('payments', 'pay-k2'), second);

    // 4. k1 removed: its record is not replayed, the handler does not run again, the error names the key and the option.
    await restart({ encryption: { keys: { k2 }, current: 'k2' } });
    const lost = await send('payments', 'pay-k1');
    expect(lost.status).toBe(500);
    expect(lost.headers.get('content-type')).toMatch(/^application\/problem\+json\b/);
    expect(lost.headers.get('idempotent-replayed')).toBeNull();
    expect(lost.json).toEqual({
      type: 'urn:idempotency:record-unreadable',
      title: 'Recorded response unreadable',
      status: 500,
      code: 'IDEMPOTENCY_RECORD_UNREADABLE',
      detail: expect.stringContaining("sealed with the key 'k1', which is not in encryption.keys ('k2')"),
    });
    expect(lost.bytes.includes(BODY_MARKER)).toBe(false);
    expect([runsOf('payments', 'pay-k1'), await effects('pay-k1')]).toEqual([1, 1]);
    // The record is still there, unchanged, for when the key comes back; k2's record still replays.
    expect((await stored('pay-k1')).response_body?.equals(sealedK1.response_body as Buffer)).toBe(true);
    expectSameAnswer(await send('payments', 'pay-k2'), second);
    expectSameAnswer(await send('payments', 'pay-plain'), plain);

    // 5. Encryption off again: sealed records are refused as unreadable, never replayed as bytes.
    await restart({});
    const off = await send('payments', 'pay-k2');
    expect(off.status).toBe(500);
    expect(off.json?.detail).toEqual(expect.stringContaining("sealed with the key 'k2', and the module has no encryption option"));
    expect([runsOf('payments', 'pay-k2'), await effects('pay-k2')]).toEqual([1, 1]);
  });

  it('IdempotencyAdmin.lookup({ includeBody }) opens sealed records with the configured keys, names the sealing key, and reports one it cannot open', async () => {
    const PAYMENTS = 'POST /sealed/payments';
    const lookup = (key: string, store?: string) =>
      app!.get(IdempotencyAdmin).lookup({ consumer: store ? 'POST /sealed/lease-redis' : PAYMENTS, key, store, includeBody: true, actor: 'ops' });
    const expectOpened = (record: AdminKeyRecord, first: Awaited<ReturnType<typeof postJson>>, sealedWith: string | null) => {
      expect(record.responseBody?.toString('utf8')).toBe(first.bytes.toString('utf8'));
      expect(record.responseHeaders?.['x-receipt']).toBe(HEADER_MARKER);
      expect(record).toMatchObject({ state: 'processed', responseStatus: first.status, sealedWith, unreadable: null });
    };

    await restart({});
    const plain = await send('payments', 'admin-plain');
    await restart({ encryption: { keys: { k1, k2 }, current: 'k1' } });
    const byK1 = await send('payments', 'admin-k1');
    const redisByK1 = await send('lease-redis', 'admin-redis-k1');
    await restart({ encryption: { keys: { k1, k2 }, current: 'k2' } });
    const byK2 = await send('payments', 'admin-k2');
    expect(keyIdOf((await stored('admin-k1')).response_body as Buffer)).toBe('k1');

    // Both keys configured: each record opened to what the client received, with the key that sealed it; plaintext as it is.
    expectOpened(await lookup('admin-k1'), byK1, 'k1');
    expectOpened(await lookup('admin-k2'), byK2, 'k2');
    expectOpened(await lookup('admin-plain'), plain, null);
    expectOpened(await lookup('admin-redis-k1', 'redis'), redisByK1, 'k1');
    // Without includeBody nothing is opened, and the stored size is the sealed one.
    const bare = await app!.get(IdempotencyAdmin).lookup({ consumer: PAYMENTS, key: 'admin-k1' });
    expect(bare).not.toHaveProperty('responseBody');
    expect(bare.responseBytes).toBe(((await stored('admin-k1')).response_body as Buffer).length);

    // k1 gone: its records are reported as unreadable, never returned as sealed bytes; k2's still open.
    await restart({ encryption: { keys: { k2 }, current: 'k2' } });
    for (const lost of [await lookup('admin-k1'), await lookup('admin-redis-k1', 'redis')]) {
      expect(lost).toMatchObject({ state: 'processed', responseStatus: 201, responseHeaders: null, responseBody: null, sealedWith: 'k1' });
      expect(lost.unreadable).toEqual({ reason: 'unknown-key', message: expect.stringContaining("sealed with the key 'k1', which is not in encryption.keys ('k2')") });
    }
    expectOpened(await lookup('admin-k2'), byK2, 'k2');
    // Encryption off: a sealed record cannot be opened, and says with which key it was sealed.
    await restart({});
    const off = await lookup('admin-k2');
    expect(off).toMatchObject({ responseBody: null, responseHeaders: null, sealedWith: 'k2', unreadable: { reason: 'no-encryption' } });
    expect(off.unreadable?.message).toContain('the module has no encryption option');
    expectOpened(await lookup('admin-plain'), plain, null);
  });

  it('refuses a sealed record moved to another key (the key is authenticated): 500, not the other answer', async () => {
    await restart({ encryption: { keys: { k2 }, current: 'k2' } });
    const a = await send('payments', 'moved-a');
    await send('payments', 'moved-b');
    await db.query(
      `UPDATE processed_messages SET response_body = (SELECT response_body FROM processed_messages WHERE message_id = 'moved-a') WHERE message_id = 'moved-b'`,
    );
    // Changed by SQL: this process's replay cache still holds the record it committed until told.
    app!.get(IdempotencyAdmin).evictCached({ consumer: 'POST /sealed/payments', key: 'moved-b' });
    const moved = await send('payments', 'moved-b');
    expect(moved.status).toBe(500);
    expect(moved.json?.detail).toEqual(expect.stringContaining("did not authenticate under the key 'k2'"));
    expect(moved.bytes.includes('moved-a')).toBe(false);
    expectSameAnswer(await send('payments', 'moved-a'), a);
    expect(runsOf('payments', 'moved-b')).toBe(1);
  });

  it("record: 'status' keeps no body and no headers; a duplicate gets the status and an empty body", async () => {
    await restart({ encryption: { keys: { k2 }, current: 'k2' } });
    const first = await send('webhook', 'evt-1');
    expect(first.status).toBe(202);
    expect(first.json).toEqual({ received: 'evt-1', cardholder: BODY_MARKER });
    expect(first.headers.get('x-receipt')).toBe(HEADER_MARKER);
    const row = await stored('evt-1');
    expect(row).toMatchObject({ response_status: 202, response_headers: null, response_body: null });
    const replay = await send('webhook', 'evt-1');
    expect(replay.status).toBe(202);
    expect(replay.bytes.length).toBe(0);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    // No recorded header: the handler's own is gone; one Nest sets before the handler (@Header) is set anew.
    expect(replay.headers.get('x-receipt')).toBeNull();
    expect(replay.headers.get('content-type')).toBeNull();
    expect(replay.headers.get('x-static')).toBe('set-by-nest-before-the-handler');
    // Nothing else: the server's own (date, connection, the empty body's framing) and those set before the handler.
    const before = ['x-powered-by', 'x-static'];
    const servers = ['connection', 'date', 'keep-alive', 'transfer-encoding', 'content-length'];
    expect([...replay.headers.keys()].filter((name) => ![...before, ...servers, 'idempotent-replayed'].includes(name))).toEqual([]);
    expect(runsOf('webhook', 'evt-1')).toBe(1);
  });

  it('seals in lease mode on the PostgreSQL store: no plaintext in the row, a duplicate answered byte for byte', async () => {
    await restart({ encryption: { keys: { k2 }, current: 'k2' } });
    const first = await send('lease-postgres', 'lease-pg-1');
    expect(first.status).toBe(201);
    const row = await stored('lease-pg-1');
    expect(row.lease_token).toBeNull();
    expect(row.response_headers).toBeNull();
    expectNoPlaintext(row.response_body as Buffer);
    expect(keyIdOf(row.response_body as Buffer)).toBe('k2');
    expectSameAnswer(await send('lease-postgres', 'lease-pg-1'), first);
    expect(runsOf('lease-postgres', 'lease-pg-1')).toBe(1);
  });

  it('seals in lease mode on the Redis store: no plaintext in the value, a duplicate answered byte for byte, rotation kept', async () => {
    await restart({ encryption: { keys: { k1, k2 }, current: 'k1' } });
    const first = await send('lease-redis', 'lease-redis-1');
    expect(first.status).toBe(201);
    const [redisKey] = (await redis.keys(`${prefix}*`)).filter((name) => name.endsWith(':lease-redis-1'));
    const value = (await redis.get(redisKey)) as string;
    const recorded = (JSON.parse(value) as { r: { s: number; h: unknown; b: string } }).r;
    expect(recorded.s).toBe(201);
    expect(recorded.h).toBeNull();
    const sealed = Buffer.from(recorded.b, 'base64');
    expectNoPlaintext(value);
    expectNoPlaintext(sealed);
    expect(keyIdOf(sealed)).toBe('k1');
    expectSameAnswer(await send('lease-redis', 'lease-redis-1'), first);

    await restart({ encryption: { keys: { k1, k2 }, current: 'k2' } });
    expectSameAnswer(await send('lease-redis', 'lease-redis-1'), first);
    await restart({ encryption: { keys: { k2 }, current: 'k2' } });
    const lost = await send('lease-redis', 'lease-redis-1');
    expect(lost.status).toBe(500);
    expect(lost.json?.type).toBe('urn:idempotency:record-unreadable');
    expect(runsOf('lease-redis', 'lease-redis-1')).toBe(1);
  });
});
