import type { INestApplication } from '@nestjs/common';
import { IdempotencyAdmin } from 'nestjs-idempotent-consumer';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HANDLER_SHAPES_TABLES_SQL, HandlerShapesModule, STATEMENT_FILE } from './fixtures/handler-shapes.module.js';
import { type Platform, PLATFORMS, startDemoApp } from './support/demo-app.js';
import { type PgBouncer, pgBouncerAvailable, startPgBouncer } from './support/pgbouncer.js';
import { postJson, type WireAnswer, wireHeaders } from './support/post-json.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

/** Both platforms straight to PostgreSQL, and Express behind PgBouncer in transaction mode. */
const SETUPS: { platform: Platform; behindPgBouncer: boolean; setup: string }[] = [
  ...PLATFORMS.map((platform) => ({ platform, behindPgBouncer: false, setup: platform })),
  ...(pgBouncerAvailable() ? [{ platform: 'express' as const, behindPgBouncer: true, setup: 'express behind PgBouncer' }] : []),
];

/**
 * The replay is the first answer again, as the wire carried it: the status, every header line
 * (names in the casing they were sent with) but those each answer has its own of and `without`,
 * a Content-Length of the body (never chunked), and the body's bytes.
 */
function expectSameOnTheWire(first: WireAnswer, replay: WireAnswer, without: string[] = []): void {
  const lines = (answer: WireAnswer) => wireHeaders(answer).filter((line) => !without.some((name) => line.toLowerCase().startsWith(`${name}:`)));
  expect(replay.status).toBe(first.status);
  expect(lines(replay)).toEqual(lines(first));
  expect(replay.headers.get('content-length')).toBe(String(replay.bytes.length));
  expect(replay.headers.get('transfer-encoding')).toBeNull();
  expect(replay.bytes.equals(first.bytes)).toBe(true);
  expect(replay.headers.get('idempotent-replayed')).toBe('true');
}

describe.each(SETUPS)('the guarantee on the handler shapes real services have, on $setup', ({ platform, behindPgBouncer }) => {
  let db: TestDatabase;
  let bouncer: PgBouncer | undefined;
  let app: INestApplication;
  let baseUrl: string;
  let folder: string;
  let counter = 0;
  const newKey = (name: string) => `${platform}-${behindPgBouncer ? 'bouncer-' : ''}${name}-${++counter}`;

  const effects = async (handler: string, key: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM effects WHERE handler = $1 AND key = $2', [handler, key]))[0].n);
  const claims = (key: string) =>
    db.query<{ consumer: string; response_status: number | null; response_headers: Record<string, unknown> | null; response_body: Buffer | null }>(
      'SELECT consumer, response_status, response_headers, response_body FROM processed_messages WHERE message_id = $1 ORDER BY consumer',
      [key],
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    folder = await mkdtemp(join(tmpdir(), 'idempotency-shapes-'));
    STATEMENT_FILE.path = join(folder, 'statement-4711.pdf');
    await writeFile(STATEMENT_FILE.path, Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(200_000, 0x42)]));
    bouncer = behindPgBouncer ? await startPgBouncer(db.url) : undefined;
    ({ app, baseUrl } = await startDemoApp(platform, bouncer?.url ?? db.url, [HandlerShapesModule]));
    await db.query(HANDLER_SHAPES_TABLES_SQL);
  });

  afterAll(async () => {
    await app?.close();
    await bouncer?.stop();
    await db?.drop();
    await rm(folder, { recursive: true, force: true });
  });

  describe('a transaction PostgreSQL aborted is a failure, never a success', () => {
    it('a handler that catches a database error and carries on is answered 500, and nothing is committed or recorded', async () => {
      const key = newKey('swallowed');
      for (let attempt = 0; attempt < 2; attempt++) {
        const answer = await postJson(`${baseUrl}/shapes/swallows-error`, { id: key }, { 'Idempotency-Key': key });
        expect(answer.status).toBe(500);
        expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(answer.json).toMatchObject({ type: 'urn:idempotency:transaction-aborted', detail: expect.stringContaining('savepoint') });
      }
      expect(await effects('swallows-error', key)).toBe(0);
      expect(await claims(key)).toEqual([]);
    });

    it('the same handler with the failing statement in a savepoint commits, once', async () => {
      const key = newKey('savepoint');
      const first = await postJson(`${baseUrl}/shapes/savepoint`, { id: key }, { 'Idempotency-Key': key });
      const again = await postJson(`${baseUrl}/shapes/savepoint`, { id: key }, { 'Idempotency-Key': key });
      expect([first.status, again.status]).toEqual([201, 201]);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await effects('savepoint', key)).toBe(1);
    });
  });

  describe("the claim's transaction belongs to the claim", () => {
    it('a handler that commits it through its query runner is refused before anything commits', async () => {
      const key = newKey('commits-itself');
      for (let attempt = 0; attempt < 2; attempt++) {
        const answer = await postJson(`${baseUrl}/shapes/commits-itself`, { id: key }, { 'Idempotency-Key': key });
        expect(answer.status).toBe(500);
        expect(answer.json).toMatchObject({
          type: 'urn:idempotency:claim-transaction',
          detail: expect.stringContaining('called commitTransaction() on the claim'),
        });
      }
      expect(await effects('commits-itself', key)).toBe(0);
      expect(await claims(key)).toEqual([]);
    });

    it('a handler that sends a bare COMMIT as SQL is refused before it reaches PostgreSQL: nothing commits', async () => {
      const key = newKey('raw-commit');
      for (let attempt = 0; attempt < 2; attempt++) {
        const answer = await postJson(`${baseUrl}/shapes/raw-commit`, { id: key }, { 'Idempotency-Key': key });
        expect(answer.status).toBe(500);
        expect(answer.json).toMatchObject({ type: 'urn:idempotency:claim-transaction', detail: expect.stringContaining("called COMMIT on the claim's transaction") });
      }
      expect(await effects('raw-commit', key)).toBe(0);
      expect(await claims(key)).toEqual([]);
    });

    it('a COMMIT hidden behind another statement is found at the commit: answered 500, and so is every retry, never an empty 2xx', async () => {
      const key = newKey('hidden-commit');
      const first = await postJson(`${baseUrl}/shapes/hidden-commit`, { id: key }, { 'Idempotency-Key': key });
      expect(first.status).toBe(500);
      expect(first.json).toMatchObject({ type: 'urn:idempotency:claim-transaction', detail: expect.stringContaining("ended the claim's transaction itself") });
      const retry = await postJson(`${baseUrl}/shapes/hidden-commit`, { id: key }, { 'Idempotency-Key': key });
      expect(retry.status).toBe(500);
      expect(retry.json).toMatchObject({ type: 'urn:idempotency:claim-transaction', detail: expect.stringContaining('without its response') });
      // The COMMIT committed the claim and the work before it; the handler does not run again.
      expect(await effects('hidden-commit', key)).toBe(1);
      expect(await claims(key)).toMatchObject([{ response_status: null }]);
    });
  });

  it('records and replays what the client was sent after a global ClassSerializerInterceptor, never what it hid', async () => {
    const key = newKey('user');
    const first = await postJson(`${baseUrl}/shapes/users`, { id: key, name: 'Ada' }, { 'Idempotency-Key': key });
    const replay = await postJson(`${baseUrl}/shapes/users`, { id: key, name: 'Ada' }, { 'Idempotency-Key': key });
    expect(first).toMatchObject({ status: 201, json: { id: key, name: 'Ada' } });
    expect(first.json).not.toHaveProperty('passwordHash');
    expectSameOnTheWire(first, replay);
    const [stored] = await claims(key);
    expect(stored.response_body!.toString('utf8')).not.toContain('secret-hash');
    expect(await effects('users', key)).toBe(1);
  });

  it('replays a status and headers set at run time (@Res({ passthrough: true })), but never Set-Cookie', async () => {
    const key = newKey('accepted');
    const first = await postJson(`${baseUrl}/shapes/accepted/${key}`, {}, { 'Idempotency-Key': key });
    expect(first.status).toBe(202);
    expect(first.headers.get('location')).toBe(`/shapes/credits/${key}`);
    expect(first.headers.get('x-credit-id')).toBe(`credit-${key}`);
    expect(first.headers.get('set-cookie')).toMatch(/session=.*-secret/);
    const replay = await postJson(`${baseUrl}/shapes/accepted/${key}`, {}, { 'Idempotency-Key': key });
    expect(replay.status).toBe(202);
    expect(replay.headers.get('location')).toBe(`/shapes/credits/${key}`);
    expect(replay.headers.get('x-credit-id')).toBe(`credit-${key}`);
    expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(replay.headers.get('set-cookie')).toBeNull();
    expectSameOnTheWire(first, replay, ['set-cookie']);
    const [stored] = await claims(key);
    const byName = Object.fromEntries(Object.entries(stored.response_headers!).map(([name, value]) => [name.toLowerCase(), value]));
    expect(byName).not.toHaveProperty('set-cookie');
    expect(byName).toMatchObject({ location: `/shapes/credits/${key}`, 'x-credit-id': `credit-${key}` });
    expect(await effects('accepted', key)).toBe(1);
  });

  it('answers the duplicate of a @Res() handler that writes its response itself, with that response', async () => {
    const key = newKey('by-hand');
    const first = await postJson(`${baseUrl}/shapes/writes-itself`, { id: key }, { 'Idempotency-Key': key });
    const replay = await postJson(`${baseUrl}/shapes/writes-itself`, { id: key }, { 'Idempotency-Key': key });
    expect(first).toMatchObject({ status: 201, json: { id: key, written: 'by hand' } });
    expect(replay.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expectSameOnTheWire(first, replay);
    // Set on Node's response as 'X-Request-Trace': replayed so, not as 'x-request-trace'.
    expect(first.rawHeaders).toContain('X-Request-Trace');
    expect(replay.rawHeaders).toContain('X-Request-Trace');
    expect(await effects('writes-itself', key)).toBe(1);
  });

  it('replays a row recorded with lower-case header names (as earlier versions stored them), with its Content-Length', async () => {
    const key = newKey('lower-case-row');
    const first = await postJson(`${baseUrl}/shapes/writes-itself`, { id: key }, { 'Idempotency-Key': key });
    const lowered = await db.query<{ names: string[] }>(
      `UPDATE processed_messages SET response_headers = (SELECT json_object_agg(lower(key), value) FROM json_each(response_headers))
        WHERE message_id = $1 RETURNING (SELECT array_agg(key) FROM json_each(response_headers)) AS names`,
      [key],
    );
    expect(lowered).toHaveLength(1);
    expect(lowered[0].names).toContain('x-request-trace');
    // Changed by SQL: this process's replay cache still holds the record it committed until told.
    app.get(IdempotencyAdmin).evictCached({ consumer: 'POST /shapes/writes-itself', key });
    const replay = await postJson(`${baseUrl}/shapes/writes-itself`, { id: key }, { 'Idempotency-Key': key });
    expect(replay.status).toBe(201);
    expect(replay.bytes.equals(first.bytes)).toBe(true);
    expect(replay.rawHeaders).toContain('x-request-trace');
    expect(replay.headers.get('x-request-trace')).toBe(`trace-${key}`);
    expect(replay.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(replay.headers.get('content-length')).toBe(String(first.bytes.length));
    expect(replay.headers.get('transfer-encoding')).toBeNull();
    expect(await effects('writes-itself', key)).toBe(1);
  });

  it('answers a request carrying two Idempotency-Key headers 400, claiming neither nor their join', async () => {
    const [one, two] = [newKey('twice-a'), newKey('twice-b')];
    const answer = await postJson(`${baseUrl}/shapes/users`, { id: one, name: 'Ada' }, { 'Idempotency-Key': [one, two] });
    expect(answer.status).toBe(400);
    expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(answer.json).toMatchObject({
      type: 'urn:idempotency:invalid-key',
      status: 400,
      detail:
        'The idempotency key (the Idempotency-Key header) came 2 times in one request; it takes exactly one value ' +
        '(as the IETF Idempotency-Key draft defines): send the header once.',
    });
    expect(await claims(one)).toEqual([]);
    expect(await claims(two)).toEqual([]);
    expect(await claims(`${one}, ${two}`)).toEqual([]);
    expect(await effects('users', one)).toBe(0);
  });

  it.each([
    ['a StreamableFile', 'file'],
    ['a Buffer', 'buffer'],
    ['a string', 'text'],
  ])('replays %s byte for byte, with its content headers, and nothing of the server', async (_, route) => {
    const key = newKey(route);
    const first = await postJson(`${baseUrl}/shapes/${route}`, { id: key }, { 'Idempotency-Key': key });
    const replay = await postJson(`${baseUrl}/shapes/${route}`, { id: key }, { 'Idempotency-Key': key });
    expect(first.status).toBeLessThan(300);
    expectSameOnTheWire(first, replay);
    expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(replay.headers.get('content-disposition')).toBe(first.headers.get('content-disposition'));
    expect(replay.bytes.toString('latin1')).not.toContain(folder);
    if (route === 'file') {
      expect(first.bytes.equals(await readFile(STATEMENT_FILE.path))).toBe(true);
      expect(first.headers.get('content-type')).toBe('application/pdf');
    }
    expect(await effects(route, key)).toBe(1);
  });

  it('gives a handler inherited by two controllers a consumer each: the same event is processed once by each', async () => {
    const id = newKey('evt');
    const answers = [];
    for (const provider of ['a', 'b', 'a', 'b']) {
      answers.push(await postJson(`${baseUrl}/shapes/provider-${provider}`, { id }));
    }
    expect(answers.map((answer) => answer.json)).toEqual([
      { receivedBy: 'ProviderAWebhooksController', consumer: 'POST /shapes/provider-a' },
      { receivedBy: 'ProviderBWebhooksController', consumer: 'POST /shapes/provider-b' },
      { receivedBy: 'ProviderAWebhooksController', consumer: 'POST /shapes/provider-a' },
      { receivedBy: 'ProviderBWebhooksController', consumer: 'POST /shapes/provider-b' },
    ]);
    expect(answers.map((answer) => answer.headers.get('idempotent-replayed'))).toEqual([null, null, 'true', 'true']);
    expect(await effects('ProviderAWebhooksController', id)).toBe(1);
    expect(await effects('ProviderBWebhooksController', id)).toBe(1);
    expect((await claims(id)).map((claim) => claim.consumer)).toEqual(['POST /shapes/provider-a', 'POST /shapes/provider-b']);
  });

  it("checks a sender function's answer like a key: bad input gets a 400, nothing is claimed", async () => {
    const missing = await postJson(`${baseUrl}/shapes/sender`, { id: 'x' }, { 'Idempotency-Key': newKey('no-sender') });
    expect(missing).toMatchObject({ status: 400, json: { detail: 'The message has no sender: the sender function is missing.' } });
    const tooLong = await postJson(`${baseUrl}/shapes/sender`, { id: 'x' }, { 'Idempotency-Key': newKey('long-sender'), 'x-sender': 's'.repeat(300) });
    expect(tooLong).toMatchObject({ status: 400, json: { detail: expect.stringContaining('is 300 characters long') } });
    expect(await effects('sender', 'x')).toBe(0);
    const key = newKey('sender');
    const good = await postJson(`${baseUrl}/shapes/sender`, { id: key }, { 'Idempotency-Key': key, 'x-sender': 'partner-7' });
    expect(good).toMatchObject({ status: 201, json: { sender: 'partner-7' } });
  });

  it("lets a handler leave a provider's attempt counter out of the fingerprint: an honest retry is replayed, a changed event refused", async () => {
    const id = newKey('provider-event');
    const first = await postJson(`${baseUrl}/shapes/retried-by-provider`, { id, amount: 10, attempt: 1 });
    const retry = await postJson(`${baseUrl}/shapes/retried-by-provider`, { id, amount: 10, attempt: 2 });
    const changed = await postJson(`${baseUrl}/shapes/retried-by-provider`, { id, amount: 11, attempt: 3 });
    expect(first.status).toBe(200);
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(changed.status).toBe(422);
    expect(await effects('retried-by-provider', id)).toBe(1);
  });

  it('joins a dataSource.transaction() of the handler to the claim: it commits once, with the claim', async () => {
    const key = newKey('data-source');
    const answers = await Promise.all(Array.from({ length: 10 }, () => postJson(`${baseUrl}/shapes/through-data-source/${key}`, {}, { 'Idempotency-Key': key })));
    expect(answers.filter((answer) => answer.status === 201)).not.toHaveLength(0);
    expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
    expect(await effects('through-data-source', key)).toBe(1);
  });
});
