import type { ExecutionContext, INestApplication } from '@nestjs/common';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { IdempotencyAdmin } from 'nestjs-idempotent-consumer';
import { SCOPE_TABLES_SQL, SCOPED_CREDIT_SUBJECT, ScopeModule } from './fixtures/scope.module.js';
import { consumeNats, NATS_URL, natsAvailable } from './support/brokers.js';
import { CapturingLogger } from './support/capturing-logger.js';
import { PLATFORMS, post, startDemoApp } from './support/demo-app.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

const UNSCOPED_WARNING = 'is keyed by the client\'s Idempotency-Key header and has an authenticated caller, but no scope';
const UNSCOPED_GUARDED_WARNING = "is keyed by the client's Idempotency-Key header and guarded by HeaderUserGuard, but has no scope";
const SCOPE_SEPARATOR = '\u001f';
/** The stored id of an anonymous caller's key: the SHA-256 of the empty text, U+001F, the key. */
const anonymousId = (key: string) => `47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU${SCOPE_SEPARATOR}${key}`;

/** Keeps debug lines too, where the module notes an anonymous caller. */
class DebugCapturingLogger extends CapturingLogger {
  debug = (message: unknown) => void this.lines.push(`DEBUG ${String(message)}`);
}

/**
 * Keys scoped to the caller: two users who send the same Idempotency-Key to one route each get
 * their own run and their own recorded answer; an unscoped route with an authenticated caller is
 * warned about once. Effects are rows of `scope_effects`, read on PostgreSQL.
 */
describe.each(PLATFORMS)('keys scoped to the caller, on %s', (platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  let logger: DebugCapturingLogger;

  const effects = async (handler: string) =>
    db.query<{ id: number; key: string; caller: string | null }>('SELECT id, key, caller FROM scope_effects WHERE handler = $1 ORDER BY id', [handler]);
  const stored = (consumer: string) =>
    db.query<{ message_id: string }>('SELECT message_id FROM processed_messages WHERE consumer = $1 ORDER BY processed_at', [consumer]);
  const as = (user: string | undefined, key: string) => ({ 'Idempotency-Key': key, ...(user ? { 'x-user': user } : {}) });
  const warnings = () => logger.lines.filter((line) => line.startsWith('WARN') && (line.includes(UNSCOPED_WARNING) || line.includes(UNSCOPED_GUARDED_WARNING)));

  beforeAll(async () => {
    db = await createTestDatabase();
    logger = new DebugCapturingLogger();
    ({ app, baseUrl } = await startDemoApp(platform, db.url, [ScopeModule], logger, { purge: { interval: false } }));
    await db.query(SCOPE_TABLES_SQL);
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('two users, one key, one body: each gets their own answer, the handler runs once for each, and each retry replays to its own user only', async () => {
    const body = { item: 'salmon kibble', quantity: 2 };
    const alice = await post(`${baseUrl}/scope/orders`, body, as('alice', 'order-1'));
    const bob = await post(`${baseUrl}/scope/orders`, body, as('bob', 'order-1'));
    expect([alice.status, bob.status]).toEqual([201, 201]);
    expect(alice.body).toMatchObject({ caller: 'alice', key: 'order-1' });
    expect(bob.body).toMatchObject({ caller: 'bob', key: 'order-1' });
    expect(bob.headers.get('idempotent-replayed')).toBeNull();
    expect((await effects('orders')).map(({ caller }) => caller)).toEqual(['alice', 'bob']);

    const aliceAgain = await post(`${baseUrl}/scope/orders`, body, as('alice', 'order-1'));
    const bobAgain = await post(`${baseUrl}/scope/orders`, body, as('bob', 'order-1'));
    expect(aliceAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(aliceAgain.body).toEqual(alice.body);
    expect(bobAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(bobAgain.body).toEqual(bob.body);
    expect(await effects('orders')).toHaveLength(2);

    // Stored under the scope's digest and the key: neither user's id in clear, and two rows for one key.
    const ids = (await stored('POST /scope/orders')).map(({ message_id }) => message_id);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
    for (const id of ids) {
      expect(id.endsWith('\u001forder-1')).toBe(true);
      expect(id).not.toMatch(/alice|bob/);
    }
  });

  it('keeps the 255-character limit of the client key: a 255-character key is scoped and replayed; 256 characters are refused', async () => {
    const longKey = 'k'.repeat(254);
    const first = await post(`${baseUrl}/scope/orders`, {}, as('carol', `${longKey}1`));
    const other = await post(`${baseUrl}/scope/orders`, {}, as('carol', `${longKey}2`));
    const again = await post(`${baseUrl}/scope/orders`, {}, as('carol', `${longKey}1`));
    expect([first.status, other.status, again.status]).toEqual([201, 201, 201]);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(other.body!.effect).not.toEqual(first.body!.effect);
    expect((await effects('orders')).filter(({ caller }) => caller === 'carol')).toHaveLength(2);
    const ids = (await stored('POST /scope/orders')).map(({ message_id }) => message_id).filter((id) => id.includes('\u001e'));
    expect(ids).toHaveLength(2);
    expect(ids.every((id) => id.length <= 255)).toBe(true);

    const tooLong = await post(`${baseUrl}/scope/orders`, {}, as('carol', 'k'.repeat(256)));
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toMatchObject({ type: 'urn:idempotency:invalid-key', detail: expect.stringContaining('256 characters long') });
  });

  it('an anonymous caller (the scope function answers nothing) gets its own run and replay, apart from every signed-in caller', async () => {
    const anonymous = await post(`${baseUrl}/scope/orders`, { item: 'tuna' }, as(undefined, 'order-anonymous'));
    const anonymousAgain = await post(`${baseUrl}/scope/orders`, { item: 'tuna' }, as(undefined, 'order-anonymous'));
    const alice = await post(`${baseUrl}/scope/orders`, { item: 'tuna' }, as('alice', 'order-anonymous'));
    const aliceAgain = await post(`${baseUrl}/scope/orders`, { item: 'tuna' }, as('alice', 'order-anonymous'));
    expect(anonymous).toMatchObject({ status: 201, body: { caller: null, key: 'order-anonymous' } });
    expect(anonymous.headers.get('idempotent-replayed')).toBeNull();
    expect(anonymousAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(anonymousAgain.body).toEqual(anonymous.body);
    expect(alice).toMatchObject({ status: 201, body: { caller: 'alice', key: 'order-anonymous' } });
    expect(alice.headers.get('idempotent-replayed')).toBeNull();
    expect(aliceAgain.body).toEqual(alice.body);
    expect((await effects('orders')).filter(({ key }) => key === 'order-anonymous').map(({ caller }) => caller)).toEqual([null, 'alice']);
    const ids = (await stored('POST /scope/orders')).map(({ message_id }) => message_id).filter((id) => id.endsWith('order-anonymous'));
    expect(ids).toHaveLength(2);
    expect(ids[0]).toBe(anonymousId('order-anonymous'));
    expect(logger.lines).toContain(
      "DEBUG ScopeController.orders (POST /scope/orders): the scope function answered nothing (no signed-in caller), so the key 'order-anonymous' " +
        'is claimed in the namespace of anonymous callers.',
    );
    // An operator reaches the anonymous caller's record with scope: null, and alice's with her identity.
    const admin = app.get(IdempotencyAdmin);
    expect(await admin.lookup({ consumer: 'POST /scope/orders', key: 'order-anonymous', scope: null })).toMatchObject({
      state: 'processed',
      messageId: anonymousId('order-anonymous'),
    });
    expect(await admin.lookup({ consumer: 'POST /scope/orders', key: 'order-anonymous', scope: 'alice' })).toMatchObject({ state: 'processed' });
    expect(await admin.forget({ consumer: 'POST /scope/orders', key: 'order-anonymous', scope: null, reason: 'test' })).toEqual({ state: 'processed', forgotten: true });
    expect((await stored('POST /scope/orders')).map(({ message_id }) => message_id).filter((id) => id.endsWith('order-anonymous'))).toHaveLength(1);
  });

  it('warns once, at start-up, about an unscoped Idempotency-Key route behind a guard, naming it and its guard, and not again at its requests', async () => {
    expect(warnings()).toEqual([expect.stringContaining(`ScopeController.unscoped (POST /scope/unscoped) ${UNSCOPED_GUARDED_WARNING}`)]);
    await post(`${baseUrl}/scope/unscoped`, {}, as(undefined, 'u-1'));
    await post(`${baseUrl}/scope/unscoped`, {}, as('alice', 'u-2'));
    await post(`${baseUrl}/scope/unscoped`, {}, as('bob', 'u-3'));
    expect(warnings()).toHaveLength(1);
    // Unscoped, the second user with the first one's key is answered the first one's record.
    const bob = await post(`${baseUrl}/scope/unscoped`, {}, as('bob', 'u-2'));
    expect(bob.headers.get('idempotent-replayed')).toBe('true');
    expect(bob.body).toMatchObject({ caller: 'alice' });
  });

  it('does not warn about a route with scope: false, nor about a webhook keyed by its body', async () => {
    const shared = await post(`${baseUrl}/scope/shared`, {}, as('alice', 's-1'));
    const webhook = await post(`${baseUrl}/scope/webhook`, { id: 'evt_1' }, { 'x-user': 'provider-account' });
    expect([shared.status, webhook.status]).toEqual([201, 201]);
    expect(await effects('shared')).toHaveLength(1);
    expect(await effects('webhook')).toHaveLength(1);
    expect(logger.lines.filter((line) => line.includes(UNSCOPED_WARNING) && /shared|webhook/.test(line))).toEqual([]);
  });
});

describe('the module-level scope', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  let logger: CapturingLogger;

  beforeAll(async () => {
    db = await createTestDatabase();
    logger = new CapturingLogger();
    const scope = (context: ExecutionContext) => context.switchToHttp().getRequest<{ user?: { id: string } }>().user?.id;
    ({ app, baseUrl } = await startDemoApp('express', db.url, [ScopeModule], logger, { purge: { interval: false }, scope }));
    await db.query(SCOPE_TABLES_SQL);
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('scopes the Idempotency-Key routes that set none, leaves scope: false and webhooks shared, and nothing is warned about', async () => {
    const alice = await post(`${baseUrl}/scope/unscoped`, {}, { 'Idempotency-Key': 'm-1', 'x-user': 'alice' });
    const bob = await post(`${baseUrl}/scope/unscoped`, {}, { 'Idempotency-Key': 'm-1', 'x-user': 'bob' });
    expect(bob.headers.get('idempotent-replayed')).toBeNull();
    expect([alice.body!.caller, bob.body!.caller]).toEqual(['alice', 'bob']);
    const sharedAlice = await post(`${baseUrl}/scope/shared`, {}, { 'Idempotency-Key': 'm-2', 'x-user': 'alice' });
    const sharedBob = await post(`${baseUrl}/scope/shared`, {}, { 'Idempotency-Key': 'm-2', 'x-user': 'bob' });
    expect(sharedBob.headers.get('idempotent-replayed')).toBe('true');
    expect(sharedBob.body).toEqual(sharedAlice.body);
    await post(`${baseUrl}/scope/webhook`, { id: 'evt_2' }, { 'x-user': 'alice' });
    expect(await db.query("SELECT caller FROM scope_effects WHERE handler IN ('unscoped', 'shared', 'webhook') ORDER BY id")).toEqual([
      { caller: 'alice' },
      { caller: 'bob' },
      { caller: 'alice' },
      { caller: 'alice' },
    ]);
    expect(logger.lines.filter((line) => line.includes(UNSCOPED_WARNING) || line.includes(UNSCOPED_GUARDED_WARNING))).toEqual([]);
  });

  it("claims an anonymous caller's key in the anonymous namespace, apart from signed-in callers and from the key unscoped", async () => {
    const anonymous = await post(`${baseUrl}/scope/unscoped`, {}, { 'Idempotency-Key': 'm-3' });
    const anonymousAgain = await post(`${baseUrl}/scope/unscoped`, {}, { 'Idempotency-Key': 'm-3' });
    const alice = await post(`${baseUrl}/scope/unscoped`, {}, { 'Idempotency-Key': 'm-3', 'x-user': 'alice' });
    expect([anonymous.status, anonymousAgain.status, alice.status]).toEqual([201, 201, 201]);
    expect(anonymousAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(anonymousAgain.body).toEqual(anonymous.body);
    expect(alice.headers.get('idempotent-replayed')).toBeNull();
    expect([anonymous.body!.caller, alice.body!.caller]).toEqual([null, 'alice']);
    expect(await db.query("SELECT caller FROM scope_effects WHERE handler = 'unscoped' AND key = 'm-3' ORDER BY id")).toEqual([{ caller: null }, { caller: 'alice' }]);
    const ids = await db.query<{ message_id: string }>(
      "SELECT message_id FROM processed_messages WHERE consumer = 'POST /scope/unscoped' AND message_id LIKE '%m-3' ORDER BY processed_at",
    );
    expect(ids.map(({ message_id }) => message_id)).toEqual([anonymousId('m-3'), expect.stringMatching(new RegExp(`^[A-Za-z0-9_-]{43}${SCOPE_SEPARATOR}m-3$`))]);
    expect(ids[1].message_id).not.toBe(anonymousId('m-3'));
  });
});

describe('an unscoped route whose caller middleware sets (Express), with no guard', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  let logger: CapturingLogger;

  beforeAll(async () => {
    db = await createTestDatabase();
    logger = new CapturingLogger();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [ScopeModule], logger, { purge: { interval: false } }));
    await db.query(SCOPE_TABLES_SQL);
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('is warned about once, at its first request with an authenticated caller, since no guard showed it at start-up', async () => {
    const sessionWarnings = () => logger.lines.filter((line) => line.startsWith('WARN') && line.includes('SessionController.orders'));
    expect(sessionWarnings()).toEqual([]);
    await post(`${baseUrl}/session/orders`, {}, { 'Idempotency-Key': 's-1' });
    expect(sessionWarnings()).toEqual([]);
    await post(`${baseUrl}/session/orders`, {}, { 'Idempotency-Key': 's-2', 'x-user': 'alice' });
    await post(`${baseUrl}/session/orders`, {}, { 'Idempotency-Key': 's-3', 'x-user': 'bob' });
    expect(sessionWarnings()).toEqual([expect.stringContaining(`SessionController.orders (POST /session/orders) ${UNSCOPED_WARNING}`)]);
  });
});

const describeWithNats = (await natsAvailable()) ? describe : describe.skip;

describeWithNats('message handlers scoped by their payload (NATS)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let nats: NatsConnection;

  async function request(msgId: string, data: unknown): Promise<Record<string, unknown>> {
    const requestHeaders = headers();
    requestHeaders.set('Nats-Msg-Id', msgId);
    const reply = await nats.request(SCOPED_CREDIT_SUBJECT, JSON.stringify({ pattern: SCOPED_CREDIT_SUBJECT, data, id: crypto.randomUUID() }), {
      headers: requestHeaders,
      timeout: 10_000,
    });
    return reply.json<Record<string, unknown>>();
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app } = await startDemoApp('express', db.url, [ScopeModule], false, { purge: { interval: false } }));
    await db.query(SCOPE_TABLES_SQL);
    await consumeNats(app);
    nats = await connect({ servers: NATS_URL });
  });

  afterAll(async () => {
    await nats?.close();
    await app?.close();
    await db?.drop();
  });

  it('one message id from two tenants: one effect per tenant, and each redelivery replays its own tenant\'s reply', async () => {
    const first = await request('msg-1', { tenant: 'acme', cents: 5 });
    const second = await request('msg-1', { tenant: 'globex', cents: 5 });
    const firstAgain = await request('msg-1', { tenant: 'acme', cents: 5 });
    const secondAgain = await request('msg-1', { tenant: 'globex', cents: 5 });
    expect(first.response).toMatchObject({ tenant: 'acme' });
    expect(second.response).toMatchObject({ tenant: 'globex' });
    expect(firstAgain.response).toEqual(first.response);
    expect(secondAgain.response).toEqual(second.response);
    expect(await db.query("SELECT caller FROM scope_effects WHERE handler = 'credit' ORDER BY id")).toEqual([{ caller: 'acme' }, { caller: 'globex' }]);
  });

  it('refuses a message whose scope is missing, and runs nothing', async () => {
    const reply = await request('msg-2', { cents: 5 });
    expect(JSON.stringify(reply)).toContain('The scope function answered undefined for this message, so whose message it is cannot be told, and it is refused.');
    expect(await db.query("SELECT caller FROM scope_effects WHERE handler = 'credit' AND caller IS NULL")).toEqual([]);
  });
});
