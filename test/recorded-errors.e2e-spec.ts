import type { INestApplication } from '@nestjs/common';
import type { IdempotencyModuleOptions } from 'nestjs-idempotent-consumer';
import {
  type ChargeRequest,
  RECORDED_ERRORS_TABLES_SQL,
  RecordedErrorsController,
  RecordedErrorsFixtureModule,
  SwallowedErrorsController,
} from './fixtures/recorded-errors.module.js';
import { PLATFORMS, startDemoApp } from './support/demo-app.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

const CHARGES = 'POST /recorded-errors/charges/:id';
const OPTIONS: IdempotencyModuleOptions = { purge: { interval: false }, connectionTimeout: '2s', metrics: { storeSampleInterval: false } };

/** A POST answered as raw bytes: what the client received, to compare byte for byte. */
async function charge(baseUrl: string, id: string, outcome: ChargeRequest['outcome'], path = 'charges') {
  const response = await fetch(`${baseUrl}/recorded-errors/${path}/${id}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'Idempotency-Key': id },
    body: JSON.stringify({ outcome }),
  });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

/**
 * `recordErrors`: a business refusal (402) is recorded with the claim, without the handler's
 * writes, and replayed to every retry; any other error answer, and every 5xx, rolls back as
 * before. Effects are rows of `recorded_errors_effects` and the handler's run count.
 */
describe.each(PLATFORMS)('recorded error answers, on %s', (platform) => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let app: INestApplication;
  let baseUrl: string;
  let other: INestApplication | undefined;

  const runs = (id: string) => app.get(RecordedErrorsController).runs.get(id) ?? 0;
  const effects = async (id: string) =>
    (await db.query<{ effect: string }>('SELECT effect FROM recorded_errors_effects WHERE charge = $1 ORDER BY id', [id])).map(({ effect }) => effect);
  const stored = async (id: string) =>
    db.query<{ response_status: number; response_headers: Record<string, string> }>(
      'SELECT response_status, response_headers FROM processed_messages WHERE consumer = $1 AND message_id = $2',
      [CHARGES, id],
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = TcpProxy.toDatabase(db.url);
    await proxy.start();
    ({ app, baseUrl } = await startDemoApp(platform, proxy.url(db.url), [RecordedErrorsFixtureModule], false, OPTIONS));
    await db.query(RECORDED_ERRORS_TABLES_SQL);
  });

  afterAll(async () => {
    await other?.close();
    await app?.close();
    await proxy?.close();
    await db?.drop();
  });

  it('records a listed 402 with the claim, its work before the throw rolled back, and replays it byte for byte without running the handler again', async () => {
    const first = await charge(baseUrl, 'c-402', 'refused');
    expect(first.status).toBe(402);
    expect(first.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(first.headers.get('x-refusal')).toBe('refused-402');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(JSON.parse(first.body.toString())).toMatchObject({ type: 'urn:shop:refused', status: 402, detail: 'Insufficient funds' });

    const again = await charge(baseUrl, 'c-402', 'refused');
    expect(again.status).toBe(402);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.equals(first.body)).toBe(true);
    for (const header of ['content-type', 'content-length', 'x-refusal']) {
      expect(again.headers.get(header)).toBe(first.headers.get(header));
    }
    expect(runs('c-402')).toBe(1);
    // The audit row written before the throw was rolled back to the savepoint; the claim committed with the answer.
    expect(await effects('c-402')).toEqual([]);
    const [record] = await stored('c-402');
    expect(record.response_status).toBe(402);
    // Named as the platform sent it (Fastify lower-cases).
    expect(Object.entries(record.response_headers).find(([name]) => name.toLowerCase() === 'x-refusal')?.[1]).toBe('refused-402');
  });

  it('records a listed 402 of a handler that carried on after a failed statement: the savepoint undoes the aborted work', async () => {
    const first = await charge(baseUrl, 'c-aborted', 'refused-after-failed-statement');
    const again = await charge(baseUrl, 'c-aborted', 'refused-after-failed-statement');
    expect(first.status).toBe(402);
    expect(again.status).toBe(402);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.equals(first.body)).toBe(true);
    expect(runs('c-aborted')).toBe(1);
    expect(await effects('c-aborted')).toEqual([]);
    expect((await stored('c-aborted')).map(({ response_status }) => response_status)).toEqual([402]);
  });

  it('commits nothing of a handler that threw when an interceptor around it answers a success instead, and records nothing', async () => {
    const swallowedRuns = (id: string) => app.get(SwallowedErrorsController).runs.get(id) ?? 0;
    const first = await charge(baseUrl, 's-402', 'refused', 'swallowed');
    const again = await charge(baseUrl, 's-402', 'refused', 'swallowed');
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(JSON.parse(again.body.toString())).toEqual({ swallowed: 'Insufficient funds' });
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(swallowedRuns('s-402')).toBe(2);
    expect(await effects('s-402')).toEqual([]);
    expect(await db.query('SELECT 1 FROM processed_messages WHERE message_id = $1', ['s-402'])).toEqual([]);
  });

  it("records the answer of Nest's own exception filter as it was sent", async () => {
    const first = await charge(baseUrl, 'p-402', 'refused', 'plain-charges');
    const again = await charge(baseUrl, 'p-402', 'refused', 'plain-charges');
    expect(first.status).toBe(402);
    expect(JSON.parse(first.body.toString())).toEqual({ message: 'Insufficient funds', code: 'card_declined' });
    expect(again.status).toBe(402);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.equals(first.body)).toBe(true);
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(runs('p-402')).toBe(1);
    expect(await effects('p-402')).toEqual([]);
  });

  it('does not record a status it does not list (409): the claim rolls back with the work, and the retry runs the handler again', async () => {
    const first = await charge(baseUrl, 'c-409', 'conflict');
    const again = await charge(baseUrl, 'c-409', 'conflict');
    expect([first.status, again.status]).toEqual([409, 409]);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(runs('c-409')).toBe(2);
    expect(await effects('c-409')).toEqual([]);
    expect(await stored('c-409')).toEqual([]);
    // The key is still free: a retry that succeeds commits.
    expect((await charge(baseUrl, 'c-409', 'paid')).status).toBe(201);
    expect(await effects('c-409')).toEqual(['audit', 'paid']);
  });

  it('never records a 5xx: the retry runs the handler again', async () => {
    const first = await charge(baseUrl, 'c-503', 'unavailable');
    const again = await charge(baseUrl, 'c-503', 'unavailable');
    expect([first.status, again.status]).toEqual([503, 503]);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(runs('c-503')).toBe(2);
    expect(await effects('c-503')).toEqual([]);
    expect(await stored('c-503')).toEqual([]);
  });

  it('records a 5xx the handler lists (a provider\'s final refusal answered 502) and replays it; an unlisted 503 still rolls back', async () => {
    const first = await charge(baseUrl, 'c-502', 'declined-for-good', 'provider-charges');
    const again = await charge(baseUrl, 'c-502', 'declined-for-good', 'provider-charges');
    expect([first.status, again.status]).toEqual([502, 502]);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.equals(first.body)).toBe(true);
    expect(runs('c-502')).toBe(1);
    expect(await effects('c-502')).toEqual([]);
    expect(await db.query('SELECT response_status FROM processed_messages WHERE message_id = $1', ['c-502'])).toEqual([{ response_status: 502 }]);

    const down = await charge(baseUrl, 'c-502-down', 'unavailable', 'provider-charges');
    const downAgain = await charge(baseUrl, 'c-502-down', 'unavailable', 'provider-charges');
    expect([down.status, downAgain.status]).toEqual([503, 503]);
    expect(downAgain.headers.get('idempotent-replayed')).toBeNull();
    expect(runs('c-502-down')).toBe(2);
  });

  it('commits a success with its work, as before', async () => {
    const first = await charge(baseUrl, 'c-201', 'paid');
    const again = await charge(baseUrl, 'c-201', 'paid');
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(runs('c-201')).toBe(1);
    expect(await effects('c-201')).toEqual(['audit', 'paid']);
  });

  it("replays a recorded 402 from this process's replay cache with the database out of reach, and from the store in another instance", async () => {
    const first = await charge(baseUrl, 'c-cache', 'refused');
    expect(first.status).toBe(402);
    proxy.refuse();
    let cached: Awaited<ReturnType<typeof charge>>;
    try {
      cached = await charge(baseUrl, 'c-cache', 'refused');
    } finally {
      proxy.accept();
    }
    expect(cached.status).toBe(402);
    expect(cached.headers.get('idempotent-replayed')).toBe('true');
    expect(cached.body.equals(first.body)).toBe(true);

    let otherUrl: string;
    ({ app: other, baseUrl: otherUrl } = await startDemoApp(platform, db.url, [RecordedErrorsFixtureModule], false, { ...OPTIONS, replayCache: false }));
    const fromStore = await charge(otherUrl, 'c-cache', 'refused');
    expect(fromStore.status).toBe(402);
    expect(fromStore.headers.get('idempotent-replayed')).toBe('true');
    expect(fromStore.headers.get('x-refusal')).toBe('refused-402');
    expect(fromStore.body.equals(first.body)).toBe(true);
    expect(runs('c-cache') + (other.get(RecordedErrorsController).runs.get('c-cache') ?? 0)).toBe(1);
    expect(await effects('c-cache')).toEqual([]);
  });
});
