import type { INestApplication } from '@nestjs/common';
import { hash } from 'node:crypto';
import type pg from 'pg';
import { FIXTURE_TABLES_SQL, FixtureController, FixtureModule } from './fixtures/fixture.module.js';
import { PLATFORMS, post, startDemoApp } from './support/demo-app.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

describe.each(PLATFORMS)('exactly-once HTTP handlers on %s', (platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let baseUrl: string;
  let keyCounter = 0;
  const newKey = () => `${platform}-key-${++keyCounter}-${Date.now()}`;
  const newAccount = () => `acc-${platform}-${++keyCounter}`;

  const ledgerCount = async (account: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account]))[0].n);
  const balanceOf = async (account: string) =>
    Number((await db.query<{ balance: string }>('SELECT balance FROM accounts WHERE account = $1', [account]))[0]?.balance ?? 0);
  const claimCount = async (key: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM processed_messages WHERE message_id = $1', [key]))[0].n);
  const storeSnapshot = async () =>
    db.query(
      `SELECT (SELECT count(*) FROM processed_messages) AS claims, (SELECT count(*) FROM ledger_entries) AS ledger,
              (SELECT coalesce(sum(balance), 0) FROM accounts) AS balances, (SELECT count(*) FROM effects) AS effects`,
    );

  /** Holds the account's row lock in a transaction of the test's own, so a credit to it blocks mid-handler. */
  async function lockAccount(account: string): Promise<pg.Client> {
    const holder = await db.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT balance FROM accounts WHERE account = $1 FOR UPDATE', [account]);
    return holder;
  }
  const blockedOnLock = async (n = 1) =>
    Number(
      (await db.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      ))[0].n,
    ) >= n;

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app, baseUrl } = await startDemoApp(platform, db.url, [FixtureModule]));
    await db.query(FIXTURE_TABLES_SQL);
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('processes a key redelivered five times once, and replays the first response', async () => {
    const key = newKey();
    const account = newAccount();
    const answers = [];
    for (let i = 0; i < 5; i++) {
      answers.push(await post(`${baseUrl}/credits`, { account, cents: 500 }, { 'Idempotency-Key': key }));
    }
    expect(answers[0]).toMatchObject({ status: 201, body: { account, cents: 500, balance: 500 } });
    expect(answers[0].headers.get('idempotent-replayed')).toBeNull();
    for (const replay of answers.slice(1)) {
      expect(replay.status).toBe(201);
      expect(replay.body).toEqual(answers[0].body);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
    }
    expect(await ledgerCount(account)).toBe(1);
    expect(await balanceOf(account)).toBe(500);
    expect(await claimCount(key)).toBe(1);
  });

  it("settles 50 concurrent deliveries of one new key to one effect ('reject': replays or 409)", async () => {
    const key = newKey();
    const account = newAccount();
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => post(`${baseUrl}/credits`, { account, cents: 700 }, { 'Idempotency-Key': key })),
    );
    const firsts = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === null);
    const replays = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === 'true');
    const conflicts = answers.filter((a) => a.status === 409);
    expect(firsts).toHaveLength(1);
    expect(firsts.length + replays.length + conflicts.length).toBe(50);
    for (const replay of replays) {
      expect(replay.body).toEqual(firsts[0].body);
    }
    for (const conflict of conflicts) {
      expect(conflict.headers.get('retry-after')).toBe('1');
      expect(conflict.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    expect(await ledgerCount(account)).toBe(1);
    expect(await balanceOf(account)).toBe(700);
  });

  it("settles 50 concurrent deliveries of one new key to one effect ('wait': every answer is the 201)", async () => {
    const key = newKey();
    const account = newAccount();
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => post(`${baseUrl}/fixture/credits-wait`, { account, cents: 300 }, { 'Idempotency-Key': key })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(201));
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(new Set(answers.map((a) => JSON.stringify(a.body)))).toEqual(new Set([JSON.stringify({ balance: 300 })]));
    expect(await ledgerCount(account)).toBe(1);
  });

  it('a 409 turns into a replay once the in-flight twin commits', async () => {
    const account = newAccount();
    await post(`${baseUrl}/credits`, { account, cents: 1 }, { 'Idempotency-Key': newKey() });
    const holder = await lockAccount(account);
    const key = newKey();
    const first = post(`${baseUrl}/credits`, { account, cents: 10 }, { 'Idempotency-Key': key });
    await until(() => blockedOnLock(), 'the first delivery waits on the account lock');
    const twin = await post(`${baseUrl}/credits`, { account, cents: 10 }, { 'Idempotency-Key': key });
    expect(twin.status).toBe(409);
    expect(twin.headers.get('retry-after')).toBe('1');
    expect(twin.body).toMatchObject({ status: 409, title: 'Request in flight' });
    await holder.query('ROLLBACK');
    await holder.end();
    expect((await first).status).toBe(201);
    const retry = await post(`${baseUrl}/credits`, { account, cents: 10 }, { 'Idempotency-Key': key });
    expect(retry).toMatchObject({ status: 201, body: { balance: 11 } });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await ledgerCount(account)).toBe(2);
  });

  it('a handler that throws leaves neither claim nor work behind; the next delivery processes', async () => {
    const controller = app.get(FixtureController);
    controller.flakyAttempts = 0;
    const key = newKey();
    const account = newAccount();
    const failed = await post(`${baseUrl}/fixture/flaky`, { account, cents: 250 }, { 'Idempotency-Key': key });
    expect(failed.status).toBe(500);
    expect(await claimCount(key)).toBe(0);
    expect(await ledgerCount(account)).toBe(0);
    expect(await balanceOf(account)).toBe(0);

    const retried = await post(`${baseUrl}/fixture/flaky`, { account, cents: 250 }, { 'Idempotency-Key': key });
    expect(retried).toMatchObject({ status: 201, body: { balance: 250 } });
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(controller.flakyAttempts).toBe(2);
    expect(await claimCount(key)).toBe(1);
    expect(await ledgerCount(account)).toBe(1);
  });

  it('a terminated database connection fails the request cleanly; the redelivery processes once', async () => {
    const account = newAccount();
    await post(`${baseUrl}/credits`, { account, cents: 1 }, { 'Idempotency-Key': newKey() });
    const holder = await lockAccount(account);
    const key = newKey();
    const inFlight = post(`${baseUrl}/credits`, { account, cents: 40 }, { 'Idempotency-Key': key });
    await until(() => blockedOnLock(), 'the delivery waits on the account lock, its claim uncommitted');
    const [{ terminated }] = await db.query<{ terminated: boolean }>(
      `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    expect(terminated).toBe(true);
    const failed = await inFlight;
    expect(failed.status).toBeGreaterThanOrEqual(500);
    await holder.query('ROLLBACK');
    await holder.end();
    expect(await claimCount(key)).toBe(0);

    const redelivered = await post(`${baseUrl}/credits`, { account, cents: 40 }, { 'Idempotency-Key': key });
    expect(redelivered).toMatchObject({ status: 201, body: { balance: 41 } });
    expect(await post(`${baseUrl}/credits`, { account, cents: 40 }, { 'Idempotency-Key': key })).toMatchObject({
      status: 201,
      body: { balance: 41 },
    });
    expect(await ledgerCount(account)).toBe(2);
  });

  it('a deadlock is answered 503 with Retry-After, never as processed or duplicate, and commits nothing', async () => {
    const barrier = await db.connect();
    await barrier.query('SELECT pg_advisory_lock(42)');
    const [keyAB, keyBA] = [newKey(), newKey()];
    const ab = post(`${baseUrl}/fixture/lock-pair`, { first: 'a', second: 'b' }, { 'Idempotency-Key': keyAB });
    const ba = post(`${baseUrl}/fixture/lock-pair`, { first: 'b', second: 'a' }, { 'Idempotency-Key': keyBA });
    await until(() => blockedOnLock(2), 'both handlers hold their first row and wait at the barrier');
    await barrier.query('SELECT pg_advisory_unlock(42)');
    await barrier.end();
    const answers = await Promise.all([ab, ba]);
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([201, 503]);
    const aborted = answers.find((a) => a.status === 503)!;
    expect(aborted.headers.get('retry-after')).toBe('1');
    expect(aborted.body).toMatchObject({ status: 503, detail: expect.stringContaining('40P01') });
    expect(await claimCount(keyAB)).toBe(answers[0].status === 201 ? 1 : 0);
    expect(await claimCount(keyBA)).toBe(answers[1].status === 201 ? 1 : 0);
    expect(await db.query('SELECT name, n FROM locks ORDER BY name')).toEqual([
      { name: 'a', n: 1 },
      { name: 'b', n: 1 },
    ]);
  });

  it('two consumers of one key each process it once', async () => {
    const id = newKey();
    for (let i = 0; i < 3; i++) {
      expect(await post(`${baseUrl}/fixture/first`, { id })).toMatchObject({
        status: 200,
        body: { handler: 'first', consumer: 'POST /fixture/first', sender: 'default' },
      });
      expect(await post(`${baseUrl}/fixture/second`, { id })).toMatchObject({
        status: 200,
        body: { handler: 'second', consumer: 'POST /fixture/second' },
      });
    }
    expect(await db.query('SELECT handler FROM effects WHERE key = $1 ORDER BY handler', [id])).toEqual([
      { handler: 'first' },
      { handler: 'second' },
    ]);
    expect(await claimCount(id)).toBe(2);
  });

  it('a nested manager.transaction() is a savepoint inside the claim transaction', async () => {
    const id = newKey();
    expect((await post(`${baseUrl}/fixture/nested`, { id }, { 'Idempotency-Key': id })).status).toBe(201);
    expect(await db.query('SELECT handler FROM effects WHERE key = $1 ORDER BY handler', [id])).toEqual([
      { handler: 'nested-inner' },
      { handler: 'nested-outer' },
    ]);
    const failing = `fail-${newKey()}`;
    expect((await post(`${baseUrl}/fixture/nested`, { id: failing }, { 'Idempotency-Key': failing })).status).toBe(500);
    expect(await db.query('SELECT handler FROM effects WHERE key = $1', [failing])).toEqual([]);
    expect(await claimCount(failing)).toBe(0);
  });

  it('IdempotencyContext outside an idempotent handler throws a clear error', async () => {
    const response = await fetch(`${baseUrl}/fixture/outside`);
    expect(await response.json()).toEqual({
      error: 'IdempotencyContextError',
      message: expect.stringContaining('outside an @IdempotentHandler()'),
      isActive: false,
    });
  });

  describe('bad input gets a clear answer and changes nothing', () => {
    const credit = { account: 'acc-bad-input', cents: 500 };

    it.each([
      ['a missing key', {}, /the Idempotency-Key header is missing/],
      ['an empty key', { 'Idempotency-Key': '' }, /is empty/],
      ['a key of 256 characters', { 'Idempotency-Key': 'k'.repeat(256) }, /256 characters long; at most 255/],
    ])('%s → 400 problem+json', async (_, headers, detail) => {
      const before = await storeSnapshot();
      const answer = await post(`${baseUrl}/credits`, credit, headers as Record<string, string>);
      expect(answer.status).toBe(400);
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(answer.body).toMatchObject({ type: 'urn:idempotency:invalid-key', status: 400, detail: expect.stringMatching(detail) });
      expect(await storeSnapshot()).toEqual(before);
    });

    it.each([
      ['a webhook event without id', { type: 'credit.granted', data: credit }, /'id' in the request body is missing/],
      ['a key with control characters', { id: 'evt_\u0001x', type: 'credit.granted', data: credit }, /control characters/],
      ['a key that is an object', { id: { nested: 1 }, type: 'credit.granted', data: credit }, /must be a string or a number/],
    ])('%s → 400 problem+json', async (_, event, detail) => {
      const before = await storeSnapshot();
      const answer = await post(`${baseUrl}/webhooks/payments`, event);
      expect(answer).toMatchObject({ status: 400, body: { status: 400, detail: expect.stringMatching(detail) } });
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await storeSnapshot()).toEqual(before);
    });

    it('counts a key in characters as PostgreSQL does: 255 emoji are accepted and stored, 256 → 400', async () => {
      const emoji = String.fromCodePoint(0x1f600 + (++keyCounter % 64));
      const account = newAccount();
      const longest = emoji.repeat(255);
      const accepted = await post(`${baseUrl}/webhooks/payments`, { id: longest, type: 'credit.granted', data: { account, cents: 300 } });
      expect(accepted).toMatchObject({ status: 200, body: { id: longest, handled: true } });
      expect(await db.query('SELECT char_length(message_id) AS n FROM processed_messages WHERE message_id = $1', [longest])).toEqual([{ n: 255 }]);
      const before = await storeSnapshot();
      const refused = await post(`${baseUrl}/webhooks/payments`, { id: emoji.repeat(256), type: 'credit.granted', data: { account, cents: 300 } });
      expect(refused).toMatchObject({ status: 400, body: { type: 'urn:idempotency:invalid-key', detail: expect.stringContaining('is 256 characters long; at most 255') } });
      expect(await storeSnapshot()).toEqual(before);
      expect(await ledgerCount(account)).toBe(1);
    });

    it('the same key with another payload → 422, and the first effect stands alone', async () => {
      const key = newKey();
      expect((await post(`${baseUrl}/credits`, credit, { 'Idempotency-Key': key })).status).toBe(201);
      const before = await storeSnapshot();
      const reused = await post(`${baseUrl}/credits`, { ...credit, cents: 501 }, { 'Idempotency-Key': key });
      expect(reused).toMatchObject({ status: 422, body: { type: 'urn:idempotency:key-reused', detail: expect.stringContaining(key) } });
      expect(reused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await storeSnapshot()).toEqual(before);
    });

    it('an oversized body → the platform answers 413 before any claim', async () => {
      const before = await storeSnapshot();
      const answer = await post(`${baseUrl}/credits`, { ...credit, padding: 'x'.repeat(2 * 1024 * 1024) }, { 'Idempotency-Key': newKey() });
      expect(answer.status).toBe(413);
      expect(await storeSnapshot()).toEqual(before);
    });

    it('an invalid body rolls back its claim: the key stays usable', async () => {
      const key = newKey();
      const before = await storeSnapshot();
      expect((await post(`${baseUrl}/credits`, { account: 'acc-x', cents: -5 }, { 'Idempotency-Key': key })).status).toBe(400);
      expect(await storeSnapshot()).toEqual(before);
      expect((await post(`${baseUrl}/credits`, { account: 'acc-x', cents: 5 }, { 'Idempotency-Key': key })).status).toBe(201);
    });
  });

  describe('keys in non-ASCII text are the text the client sent', () => {
    /** A header value as a client puts it on the wire: the text's UTF-8 bytes (fetch sends one byte per character). */
    const utf8Header = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
    const storedIds = (consumer: string) =>
      db.query<{ message_id: string }>('SELECT message_id FROM processed_messages WHERE consumer = $1 ORDER BY processed_at', [consumer]);
    const effectsOf = (handler: string, key: string) =>
      db.query<{ key: string }>('SELECT key FROM effects WHERE handler = $1 AND key = $2', [handler, key]);

    it('an Idempotency-Key header in UTF-8 is stored, handed to the handler and replayed as the client wrote it', async () => {
      const key = `café-€-${newKey()}`;
      const first = await post(`${baseUrl}/fixture/keys`, {}, { 'Idempotency-Key': utf8Header(key) });
      const again = await post(`${baseUrl}/fixture/keys`, {}, { 'Idempotency-Key': utf8Header(key) });
      expect(first).toMatchObject({
        status: 201,
        body: { key, downstreamKey: hash('sha256', `nestjs-idempotent-consumer\u0000POST /fixture/keys\u0000${key}`, 'hex') },
      });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      expect((await storedIds('POST /fixture/keys')).filter(({ message_id }) => message_id.startsWith('caf'))).toEqual([{ message_id: key }]);
      expect(await effectsOf('keys', key)).toHaveLength(1);
    });

    it('counts a header key in characters: 255 × é are accepted and stored, 256 → 400 naming 256 characters', async () => {
      const longest = 'é'.repeat(254) + String.fromCharCode(0xe0 + (keyCounter++ % 16));
      const accepted = await post(`${baseUrl}/fixture/keys`, {}, { 'Idempotency-Key': utf8Header(longest) });
      expect(accepted).toMatchObject({ status: 201, body: { key: longest } });
      expect(await db.query('SELECT char_length(message_id) AS n FROM processed_messages WHERE message_id = $1', [longest])).toEqual([{ n: 255 }]);
      const replayed = await post(`${baseUrl}/fixture/keys`, {}, { 'Idempotency-Key': utf8Header(longest) });
      expect(replayed.headers.get('idempotent-replayed')).toBe('true');
      const before = await storeSnapshot();
      const refused = await post(`${baseUrl}/fixture/keys`, {}, { 'Idempotency-Key': utf8Header('é'.repeat(256)) });
      expect(refused).toMatchObject({
        status: 400,
        body: { type: 'urn:idempotency:invalid-key', detail: 'The idempotency key (the Idempotency-Key header) is 256 characters long; at most 255 are accepted.' },
      });
      expect(await storeSnapshot()).toEqual(before);
    });

    it('a header key that is not UTF-8 → 400 problem+json saying so, and nothing claimed', async () => {
      const before = await storeSnapshot();
      // 'caf' and the single byte 0xE9 (é in Latin-1), which is no UTF-8.
      const refused = await post(`${baseUrl}/fixture/keys`, {}, { 'Idempotency-Key': `caf\u00e9-${newKey()}` });
      expect(refused).toMatchObject({
        status: 400,
        body: { type: 'urn:idempotency:invalid-key', detail: expect.stringContaining('(the Idempotency-Key header) is not UTF-8 text') },
      });
      expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await storeSnapshot()).toEqual(before);
    });

    it('a key in the body is the same text: stored, replayed, 255 × é accepted and 256 refused', async () => {
      const key = `café-${newKey()}`;
      const first = await post(`${baseUrl}/fixture/first`, { id: key });
      const again = await post(`${baseUrl}/fixture/first`, { id: key });
      expect(first).toMatchObject({ status: 200, body: { key } });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await storedIds('POST /fixture/first').then((rows) => rows.filter(({ message_id }) => message_id === key))).toHaveLength(1);
      expect(await effectsOf('first', key)).toHaveLength(1);

      const longest = 'é'.repeat(254) + String.fromCharCode(0xe0 + (keyCounter++ % 16));
      expect(await post(`${baseUrl}/fixture/first`, { id: longest })).toMatchObject({ status: 200, body: { key: longest } });
      expect(await effectsOf('first', longest)).toHaveLength(1);
      const before = await storeSnapshot();
      const refused = await post(`${baseUrl}/fixture/first`, { id: 'é'.repeat(256) });
      expect(refused).toMatchObject({ status: 400, body: { detail: expect.stringContaining('is 256 characters long; at most 255') } });
      expect(await storeSnapshot()).toEqual(before);
    });
  });

  it('webhook events are keyed by their id, scoped to the payments sender', async () => {
    const account = newAccount();
    const event = { id: `evt_${newKey()}`, type: 'credit.granted', data: { account, cents: 900 } };
    const first = await post(`${baseUrl}/webhooks/payments`, event);
    const again = await post(`${baseUrl}/webhooks/payments`, event);
    expect(first).toMatchObject({ status: 200, body: { id: event.id, handled: true, balance: 900 } });
    expect(again).toMatchObject({ status: 200, body: first.body });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await db.query('SELECT sender, consumer FROM processed_messages WHERE message_id = $1', [event.id])).toEqual([
      { sender: 'payments', consumer: 'POST /webhooks/payments' },
    ]);
    expect(await fetch(`${baseUrl}/accounts/${account}`).then((r) => r.json())).toEqual({ account, balance: 900 });
  });
});

describe('a service whose claim function was dropped while it runs', () => {
  it('is answered 500 problem+json with nothing committed, and the error it logs names the function and the migration that recreates it', async () => {
    const db = await createTestDatabase();
    const errors: string[] = [];
    const ignore = () => undefined;
    const logger = { log: ignore, warn: ignore, debug: ignore, verbose: ignore, error: (message: unknown) => errors.push(String(message)) };
    const { app, baseUrl } = await startDemoApp('express', db.url, [], logger);
    try {
      await db.query('DROP FUNCTION processed_messages_claim(text, text, text, text, bigint)');
      const answer = await post(`${baseUrl}/credits`, { account: 'acc-no-functions', cents: 5 }, { 'Idempotency-Key': 'no-functions' });
      expect(answer.status).toBe(500);
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(answer.body?.type).toBe('urn:idempotency:store-schema');
      // Its migrations are recorded as run: the log says how to recreate it, not to add them.
      expect(errors.join('\n')).toContain(
        'the function processed_messages_claim(text, text, text, text, bigint) does not exist. ' +
          "It was there when the application started, so it was dropped since, and TypeORM will not run the migrations it has recorded again: " +
          "recreate the claim's functions by running UpgradeProcessedMessagesTable1796342400000's up() once more",
      );
      const [{ ledger, claims }] = await db.query<{ ledger: string; claims: string }>(
        'SELECT (SELECT count(*) FROM ledger_entries) AS ledger, (SELECT count(*) FROM processed_messages) AS claims',
      );
      expect({ ledger: Number(ledger), claims: Number(claims) }).toEqual({ ledger: 0, claims: 0 });
    } finally {
      await app.close();
      await db.drop();
    }
  });
});
