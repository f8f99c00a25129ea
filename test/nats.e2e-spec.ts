import type { INestApplication } from '@nestjs/common';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { MessageFixtureModule } from './fixtures/message-fixture.module.js';
import { FIXTURE_TABLES_SQL } from './fixtures/fixture.module.js';
import { consumeNats, NATS_URL, natsAvailable } from './support/brokers.js';
import { startDemoApp } from './support/demo-app.js';
import { CapturingLogger } from './support/capturing-logger.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const describeWithBroker = (await natsAvailable()) ? describe : describe.skip;

describeWithBroker('exactly-once NATS request handlers', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let nats: NatsConnection;
  const logger = new CapturingLogger();

  /** A Nest request over NATS, as a retrying client sends it: same Nats-Msg-Id on every try. */
  async function request(msgId: string | undefined, data: unknown): Promise<Record<string, unknown>> {
    const requestHeaders = headers();
    if (msgId) requestHeaders.set('Nats-Msg-Id', msgId);
    const reply = await nats.request('fixture.credit', JSON.stringify({ pattern: 'fixture.credit', data, id: crypto.randomUUID() }), {
      headers: requestHeaders,
      timeout: 10_000,
    });
    return reply.json<Record<string, unknown>>();
  }
  const ledgerRows = async (account: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account]))[0].n);

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ app } = await startDemoApp('express', db.url, [MessageFixtureModule], logger));
    await db.query(FIXTURE_TABLES_SQL);
    await consumeNats(app);
    nats = await connect({ servers: NATS_URL });
  });

  afterAll(async () => {
    await nats?.close();
    await app?.close();
    await db?.drop();
  });

  it('a request retried with the same Nats-Msg-Id → one effect, identical replies', async () => {
    const replies = [];
    for (let i = 0; i < 5; i++) {
      replies.push(await request('nats-credit-1', { account: 'acc-nats', cents: 42 }));
    }
    expect(replies[0]).toMatchObject({ response: { balance: 42, at: expect.any(String) } });
    for (const reply of replies.slice(1)) {
      expect(reply.response).toEqual(replies[0].response);
    }
    expect(await ledgerRows('acc-nats')).toBe(1);
  });

  it('ten concurrent tries of one new request → one effect, the same reply to each', async () => {
    const replies = await Promise.all(Array.from({ length: 10 }, () => request('nats-credit-2', { account: 'acc-nats-2', cents: 8 })));
    const responses = new Set(replies.map((reply) => JSON.stringify(reply.response)));
    expect(responses.size).toBe(1);
    expect(replies[0].response).toMatchObject({ balance: 8 });
    expect(await ledgerRows('acc-nats-2')).toBe(1);
  });

  it('a request without Nats-Msg-Id is refused with the code HTTP and GraphQL give, and changes nothing', async () => {
    const reply = await request(undefined, { account: 'acc-nats-3', cents: 8 });
    expect(reply.err).toMatchObject({ status: 'error', code: 'IDEMPOTENCY_INVALID_KEY', name: 'IdempotencyKeyError' });
    expect(JSON.stringify(reply)).toContain('the Nats-Msg-Id header is missing');
    expect(await ledgerRows('acc-nats-3')).toBe(0);
  });

  it("a failing handler's log line names the message by its Nats-Msg-Id, its consumer and the cause", async () => {
    const eventHeaders = headers();
    eventHeaders.set('Nats-Msg-Id', 'nats-poison-1');
    nats.publish('fixture.poison', JSON.stringify({ pattern: 'fixture.poison', data: { id: 'nats-poison-1' } }), { headers: eventHeaders });
    const line = /^WARN nats message 'nats-poison-1' for 'fixture\.poison' failed; NATS does not redeliver it: .*: poison: this message can never be processed$/;
    await until(() => Promise.resolve(logger.lines.some((logged) => line.test(logged))), 'the failure is logged');
    expect(Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM effects WHERE key = 'nats-poison-1'`))[0].n)).toBe(0);
  });
});
