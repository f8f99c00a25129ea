import { Body, Controller, type INestApplication, Module, Post } from '@nestjs/common';
import { IDEMPOTENCY_CHANNELS, IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { PLATFORMS, startDemoApp } from './support/demo-app.js';
import { postJson } from './support/post-json.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

interface Transfer {
  readonly requestId?: string;
  readonly cents: number;
}

/** One handler per key source but the client's Idempotency-Key header; each writes an effect row per run. */
@Controller('key-reuse')
class KeyReuseController {
  constructor(private readonly idempotency: IdempotencyContext) {}

  @Post('header')
  @IdempotentHandler({ key: { header: 'X-Request-Id' } })
  header(@Body() body: Transfer) {
    return this.transfer('header', body);
  }

  @Post('body')
  @IdempotentHandler({ key: { body: 'requestId' } })
  body(@Body() body: Transfer) {
    return this.transfer('body', body);
  }

  @Post('function')
  @IdempotentHandler({ key: (context) => context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-operation'] })
  keyFunction(@Body() body: Transfer) {
    return this.transfer('function', body);
  }

  private async transfer(route: string, { cents }: Transfer) {
    const [row] = await this.idempotency.manager.query<{ id: number }[]>('INSERT INTO key_reuse_effects (route, cents) VALUES ($1, $2) RETURNING id', [route, cents]);
    return { transfer: row.id, cents };
  }
}

@Module({ controllers: [KeyReuseController] })
class KeyReuseModule {}

/** How each route carries its key `key` with `cents`. */
const SOURCES = {
  header: (key: string, cents: number) => ({ body: { cents }, headers: { 'X-Request-Id': key } }),
  body: (key: string, cents: number) => ({ body: { requestId: key, cents }, headers: {} }),
  function: (key: string, cents: number) => ({ body: { cents }, headers: { 'X-Operation': key } }),
} as const;

/** Every message published on the `rejected` channel. */
const rejected: Record<string, unknown>[] = [];
const onRejected = (message: unknown) => void rejected.push(message as Record<string, unknown>);
beforeAll(() => subscribe(IDEMPOTENCY_CHANNELS.rejected, onRejected));
afterAll(() => unsubscribe(IDEMPOTENCY_CHANNELS.rejected, onRejected));

/**
 * A key taken from a custom header, the body or a key function, reused with another payload, is
 * refused 422 as an `Idempotency-Key` is; a record written without a fingerprint (by an earlier
 * version) still replays. The replay cache is off, so every duplicate reads the store.
 */
describe.each(PLATFORMS)('key reuse on every key source, on %s', (platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;

  const effects = async (route: string) => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM key_reuse_effects WHERE route = $1', [route]))[0].n);
  const send = (route: keyof typeof SOURCES, key: string, cents: number) => {
    const { body, headers } = SOURCES[route](key, cents);
    return postJson(`${baseUrl}/key-reuse/${route}`, body, headers);
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp(platform, db.url, [KeyReuseModule], false, { purge: { interval: false }, replayCache: false }));
    await db.query('CREATE TABLE key_reuse_effects (id serial PRIMARY KEY, route text NOT NULL, cents int NOT NULL)');
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it.each(Object.keys(SOURCES) as (keyof typeof SOURCES)[])(
    'a key from %s reused with another payload is refused 422 key-reused, published as rejected; the same payload is replayed',
    async (route) => {
      const key = `${platform}-${route}-reused`;
      const first = await send(route, key, 100);
      expect(first.status).toBe(201);
      const same = await send(route, key, 100);
      expect(same.status).toBe(201);
      expect(same.headers.get('idempotent-replayed')).toBe('true');
      expect(same.bytes.equals(first.bytes)).toBe(true);
      rejected.splice(0);
      const reused = await send(route, key, 999);
      expect(reused.status).toBe(422);
      expect(reused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(reused.json).toMatchObject({ type: 'urn:idempotency:key-reused', code: 'IDEMPOTENCY_KEY_REUSED', status: 422 });
      expect(await effects(route)).toBe(1);
      expect(rejected).toEqual([{ consumer: `POST /key-reuse/${route}`, sender: 'default', code: 'IDEMPOTENCY_KEY_REUSED' }]);
    },
  );

  it('a record written without a fingerprint (by an earlier version) is still replayed, to any payload', async () => {
    const key = `${platform}-legacy`;
    const first = await send('body', key, 5);
    expect(first.status).toBe(201);
    await db.query(`UPDATE processed_messages SET fingerprint = NULL WHERE consumer = 'POST /key-reuse/body' AND message_id = $1`, [key]);
    for (const cents of [5, 6]) {
      const again = await send('body', key, cents);
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.bytes.equals(first.bytes)).toBe(true);
    }
    expect(Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM key_reuse_effects WHERE route = 'body' AND cents IN (5, 6)`))[0].n)).toBe(1);
  });

  it('a request without its key is refused 400 invalid-key, published as rejected', async () => {
    rejected.splice(0);
    const answer = await postJson(`${baseUrl}/key-reuse/header`, { cents: 1 });
    expect(answer.status).toBe(400);
    expect(answer.json).toMatchObject({ type: 'urn:idempotency:invalid-key', code: 'IDEMPOTENCY_INVALID_KEY' });
    expect(rejected).toEqual([{ consumer: 'POST /key-reuse/header', sender: 'default', code: 'IDEMPOTENCY_INVALID_KEY' }]);
  });
});

/**
 * The module's `scope` scopes only keys from the client's Idempotency-Key header; a key from
 * another source is bound to its caller by the fingerprint, so another caller's request with the
 * same key and payload is refused 422 rather than answered the first caller's response.
 */
describe('key reuse across callers, with the module scope', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;

  const send = (user: string | undefined, key: string, cents: number) =>
    postJson(`${baseUrl}/key-reuse/header`, { cents }, { 'X-Request-Id': key, ...(user === undefined ? {} : { 'X-User': user }) });

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [KeyReuseModule], false, {
      purge: { interval: false },
      scope: (context) => context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-user'],
    }));
    await db.query('CREATE TABLE key_reuse_effects (id serial PRIMARY KEY, route text NOT NULL, cents int NOT NULL)');
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it("never replays one caller's record to another: the other caller's request with the same key is refused 422", async () => {
    const first = await send('alice', 'shared-request-id', 100);
    expect(first.status).toBe(201);
    const again = await send('alice', 'shared-request-id', 100);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.bytes.equals(first.bytes)).toBe(true);
    const other = await send('bob', 'shared-request-id', 100);
    expect(other.status).toBe(422);
    expect(other.json).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(other.bytes.equals(first.bytes)).toBe(false);
  });

  it('a caller the scope cannot name (no user) is one caller of its own', async () => {
    const first = await send(undefined, 'anonymous-request-id', 7);
    expect((await send(undefined, 'anonymous-request-id', 7)).headers.get('idempotent-replayed')).toBe('true');
    expect((await send('alice', 'anonymous-request-id', 7)).status).toBe(422);
    expect(first.status).toBe(201);
  });
});
