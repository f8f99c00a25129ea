import { Body, Controller, type INestApplication, Module, Post, Res } from '@nestjs/common';
import { IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';
import type { ServerResponse } from 'node:http';
import { CapturingLogger } from './support/capturing-logger.js';
import { PLATFORMS, startDemoApp } from './support/demo-app.js';
import { postJson } from './support/post-json.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

/** The module's `replay.maxBodyBytes` in this suite: small, so the bodies around it stay small. */
const LIMIT = 1024;

/** Runs of each handler per key, counted in memory: a rolled-back run leaves no row to count. */
const runs = new Map<string, number>();
const countRun = (route: string, id: string) => runs.set(`${route}:${id}`, (runs.get(`${route}:${id}`) ?? 0) + 1);
const runsOf = (route: string, id: string) => runs.get(`${route}:${id}`) ?? 0;

/** JSON of `fields` padded with `x` to exactly `bytes` bytes. */
function jsonOfBytes(fields: Record<string, unknown>, bytes: number): Record<string, unknown> {
  const padding = bytes - Buffer.byteLength(JSON.stringify({ ...fields, pad: '' }));
  if (padding < 0) {
    throw new Error(`${JSON.stringify(fields)} is longer than ${bytes} bytes`);
  }
  return { ...fields, pad: 'x'.repeat(padding) };
}

/** Idempotent handlers that write an effect row, then answer a body of the size the request asks for. */
@Controller('body-limit')
class BodyLimitController {
  constructor(private readonly idempotency: IdempotencyContext) {}

  /** Returns a JSON body of exactly `bytes` bytes, serialized by the platform. */
  @Post('json')
  @IdempotentHandler()
  async json(@Body() body: { id: string; bytes: number }) {
    countRun('json', body.id);
    await this.effect('json', body.id);
    return jsonOfBytes({ id: body.id }, body.bytes);
  }

  /** As `json`, recording its status alone. */
  @Post('status-only')
  @IdempotentHandler({ record: 'status' })
  async statusOnly(@Body() body: { id: string; bytes: number }) {
    countRun('status-only', body.id);
    await this.effect('status-only', body.id);
    return jsonOfBytes({ id: body.id }, body.bytes);
  }

  /**
   * Writes its response itself (`@Res()`, no passthrough) to Node's response, Express's own or
   * Fastify's `reply.raw`: `chunks` NDJSON lines of `chunkBytes` bytes each, one `write()` apiece,
   * each waiting for the previous one's callback, as a stream with backpressure does.
   */
  @Post('stream')
  @IdempotentHandler()
  async stream(@Body() body: { id: string; chunks: number; chunkBytes: number }, @Res() response: ServerResponse | { raw: ServerResponse }) {
    countRun('stream', body.id);
    await this.effect('stream', body.id);
    const raw = 'raw' in response ? response.raw : response;
    raw.writeHead(200, { 'content-type': 'application/x-ndjson' });
    for (let chunk = 0; chunk < body.chunks; chunk++) {
      const line = `${JSON.stringify(jsonOfBytes({ id: body.id, chunk }, body.chunkBytes - 1))}\n`;
      await new Promise<void>((resolve, reject) => raw.write(line, (error) => (error ? reject(error) : resolve())));
    }
    raw.end();
  }

  private effect(route: string, key: string) {
    return this.idempotency.manager.query('INSERT INTO body_limit_effects (route, key) VALUES ($1, $2)', [route, key]);
  }
}

@Module({ controllers: [BodyLimitController] })
class BodyLimitModule {}

describe.each(PLATFORMS)(`replay.maxBodyBytes (${LIMIT}) on %s`, (platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  let counter = 0;
  const newKey = (name: string) => `${platform}-${name}-${++counter}`;
  const logger = new CapturingLogger();
  const tooLargeWarnings = (consumer: string) => logger.lines.filter((line) => line.startsWith('WARN') && line.includes(consumer) && line.includes('replay.maxBodyBytes'));

  const effects = async (route: string, key: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM body_limit_effects WHERE route = $1 AND key = $2', [route, key]))[0].n);
  const claims = (key: string) =>
    db.query<{ consumer: string; response_status: number | null; response_body: Buffer | null }>(
      'SELECT consumer, response_status, response_body FROM processed_messages WHERE message_id = $1 ORDER BY consumer',
      [key],
    );
  /** Backends of this suite's database still inside a transaction: a rolled-back claim leaves none. */
  const openTransactions = async () =>
    Number(
      (await db.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
      ))[0].n,
    );

  /**
   * The answer the guide (libs/idempotency/docs/keys.md) and IdempotencyResponseTooLargeError
   * document for a duplicate of a message whose response was too large to record: 500,
   * problem+json, replayed, naming the option; the first delivery's status is in its detail.
   */
  function expectTooLargeReplay(answer: Awaited<ReturnType<typeof postJson>>, key: string, firstStatus: number) {
    expect(answer.status).toBe(500);
    expect(answer.headers.get('content-type')).toBe('application/problem+json');
    expect(answer.headers.get('idempotent-replayed')).toBe('true');
    expect(answer.headers.get('retry-after')).toBeNull();
    expect(answer.json).toEqual({
      type: 'urn:idempotency:response-too-large',
      title: 'Response too large to record',
      status: 500,
      code: 'IDEMPOTENCY_RESPONSE_TOO_LARGE',
      detail: expect.stringContaining(`replay.maxBodyBytes (${LIMIT} bytes)`),
    });
    expect(answer.json?.detail).toEqual(expect.stringContaining(`'${key}'`));
    expect(answer.json?.detail).toEqual(expect.stringContaining(`answered ${firstStatus}`));
    // Nothing of the handler's body is replayed.
    expect(answer.bytes.toString('utf8')).not.toContain('xxxxxxxx');
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp(platform, db.url, [BodyLimitModule], logger, { replay: { maxBodyBytes: LIMIT }, purge: { interval: false } }));
    await db.query('CREATE TABLE body_limit_effects (route text NOT NULL, key text NOT NULL)');
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it.each([
    ['one byte over the limit', LIMIT + 1],
    ['four times the limit', 4 * LIMIT],
  ])('answers a JSON body %s in full and commits it once; its duplicates get 500 response-too-large, replayed, the handler not run again', async (_, bytes) => {
    const key = newKey(`json-${bytes}`);
    const first = await postJson(`${baseUrl}/body-limit/json`, { id: key, bytes }, { 'Idempotency-Key': key });
    expect(first.status).toBe(201);
    expect(first.bytes).toHaveLength(bytes);
    expect(first.json).toMatchObject({ id: key });
    for (let attempt = 1; attempt <= 2; attempt++) {
      const again = await postJson(`${baseUrl}/body-limit/json`, { id: key, bytes }, { 'Idempotency-Key': key });
      expectTooLargeReplay(again, key, 201);
    }
    expect(runsOf('json', key)).toBe(1);
    expect(await effects('json', key)).toBe(1);
    expect(await claims(key)).toMatchObject([{ consumer: 'POST /body-limit/json', response_status: 500 }]);
    expect(await openTransactions()).toBe(0);
    // One warning per handler, at its first response past the limit, naming the option.
    expect(tooLargeWarnings('POST /body-limit/json')).toHaveLength(1);
  });

  it.each([
    ['exactly at the limit', LIMIT],
    ['one byte under the limit', LIMIT - 1],
  ])('commits a JSON body %s once, and replays its bytes to the duplicate', async (_, bytes) => {
    const key = newKey(`json-${bytes}`);
    const first = await postJson(`${baseUrl}/body-limit/json`, { id: key, bytes }, { 'Idempotency-Key': key });
    expect(first.status).toBe(201);
    expect(first.bytes).toHaveLength(bytes);
    expect(first.json).toMatchObject({ id: key });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await postJson(`${baseUrl}/body-limit/json`, { id: key, bytes }, { 'Idempotency-Key': key });
    expect(again.status).toBe(201);
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(runsOf('json', key)).toBe(1);
    expect(await effects('json', key)).toBe(1);
    const stored = await claims(key);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ consumer: 'POST /body-limit/json', response_status: 201 });
    expect(stored[0].response_body?.equals(first.bytes)).toBe(true);
  });

  it("applies no limit to a handler that records its status alone: its duplicate gets that status, the handler not run again", async () => {
    const key = newKey('status-only');
    const first = await postJson(`${baseUrl}/body-limit/status-only`, { id: key, bytes: 4 * LIMIT }, { 'Idempotency-Key': key });
    expect(first.status).toBe(201);
    expect(first.bytes).toHaveLength(4 * LIMIT);
    const again = await postJson(`${baseUrl}/body-limit/status-only`, { id: key, bytes: 4 * LIMIT }, { 'Idempotency-Key': key });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.bytes).toHaveLength(0);
    expect(runsOf('status-only', key)).toBe(1);
    expect(await effects('status-only', key)).toBe(1);
    expect(tooLargeWarnings('POST /body-limit/status-only')).toEqual([]);
  });

  it('answers a @Res() handler whose written chunks cross the limit mid-stream in full and commits once; its duplicate gets 500 response-too-large', async () => {
    const key = newKey('stream-over');
    // Four writes of 400 bytes: 400, 800, then 1200 crosses 1024 on the third, and one more follows.
    const request = { id: key, chunks: 4, chunkBytes: 400 };
    const first = await postJson(`${baseUrl}/body-limit/stream`, request, { 'Idempotency-Key': key });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('application/x-ndjson');
    expect(first.bytes).toHaveLength(1600);
    const again = await postJson(`${baseUrl}/body-limit/stream`, request, { 'Idempotency-Key': key });
    expectTooLargeReplay(again, key, 200);
    expect(runsOf('stream', key)).toBe(1);
    expect(await effects('stream', key)).toBe(1);
    expect(await openTransactions()).toBe(0);
  });

  it('commits a @Res() handler whose written chunks add up to exactly the limit once, and replays them to the duplicate', async () => {
    const key = newKey('stream-at');
    const request = { id: key, chunks: 4, chunkBytes: LIMIT / 4 };
    const first = await postJson(`${baseUrl}/body-limit/stream`, request, { 'Idempotency-Key': key });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('application/x-ndjson');
    expect(first.bytes).toHaveLength(LIMIT);
    expect(first.bytes.toString('utf8').split('\n')).toHaveLength(5);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await postJson(`${baseUrl}/body-limit/stream`, request, { 'Idempotency-Key': key });
    expect(again.status).toBe(200);
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(again.headers.get('content-type')).toBe('application/x-ndjson');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(runsOf('stream', key)).toBe(1);
    expect(await effects('stream', key)).toBe(1);
    expect(await claims(key)).toMatchObject([{ consumer: 'POST /body-limit/stream', response_status: 200 }]);
  });
});

describe('replay.maxBodyBytes by default', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [BodyLimitModule], false, { purge: { interval: false } }));
    await db.query('CREATE TABLE body_limit_effects (route text NOT NULL, key text NOT NULL)');
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('records a 1.28 MB JSON response, answered once and replayed byte for byte', async () => {
    const key = 'default-limit-1.28MB';
    const bytes = 1_280_000;
    const first = await postJson(`${baseUrl}/body-limit/json`, { id: key, bytes }, { 'Idempotency-Key': key });
    expect(first.status).toBe(201);
    expect(first.bytes).toHaveLength(bytes);
    const again = await postJson(`${baseUrl}/body-limit/json`, { id: key, bytes }, { 'Idempotency-Key': key });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(runsOf('json', key)).toBe(1);
  });
});
