import type { INestApplication, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AppModule } from '../apps/demo-api/src/app.module.js';
import { FIXTURE_TABLES_SQL, FixtureModule } from './fixtures/fixture.module.js';
import { LeaseChargesModule, RenamedStripeWebhookModule, StripeWebhookModule } from './fixtures/renamed-handlers.module.js';
import { CapturingLogger } from './support/capturing-logger.js';
import { post, startDemoApp } from './support/demo-app.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

/** The consumer name of the Stripe fixture's handler: its route, whatever its class and method are called. */
const STRIPE_CONSUMER = 'POST /webhooks/stripe';

describe('consumer names that survive refactors and upgrades', () => {
  let db: TestDatabase;
  let app: INestApplication | undefined;
  let logger: CapturingLogger;

  const effects = async (key: string) =>
    Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM effects WHERE handler = 'stripe' AND key = $1`, [key]))[0].n);
  const consumersOf = async (key: string) =>
    (await db.query<{ consumer: string }>('SELECT consumer FROM processed_messages WHERE message_id = $1 ORDER BY consumer', [key])).map(
      (row) => row.consumer,
    );

  async function start(modules: Type[], options: { warnOnUnusedConsumers?: boolean } = {}): Promise<string> {
    await app?.close();
    logger = new CapturingLogger();
    const started = await startDemoApp('express', db.url, modules, logger, options);
    app = started.app;
    return started.baseUrl;
  }

  /** A row as a version before 0.3.0 stored it, under its default consumer name `Class.method`. */
  async function storeAsBefore(consumer: string, key: string, body: unknown): Promise<void> {
    await db.query(
      `INSERT INTO processed_messages (consumer, message_id, sender, response_status, response_headers, response_body, expires_at)
       VALUES ($1, $2, 'stripe', 200, '{"content-type":"application/json; charset=utf-8"}', convert_to($3, 'UTF8'), now() + interval '7 days')`,
      [consumer, key, JSON.stringify(body)],
    );
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    await start([]);
    await db.query(FIXTURE_TABLES_SQL);
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('recognises a redelivery after the handler class and method were renamed', async () => {
    let baseUrl = await start([StripeWebhookModule]);
    const first = await post(`${baseUrl}/webhooks/stripe`, { id: 'evt_rename' });
    expect(first).toMatchObject({ status: 200, body: { received: 'evt_rename' } });

    baseUrl = await start([RenamedStripeWebhookModule]);
    const redelivery = await post(`${baseUrl}/webhooks/stripe`, { id: 'evt_rename' });
    expect(redelivery).toMatchObject({ status: 200, body: { received: 'evt_rename' } });
    expect(redelivery.headers.get('idempotent-replayed')).toBe('true');
    expect(await effects('evt_rename')).toBe(1);
    expect(await consumersOf('evt_rename')).toEqual([STRIPE_CONSUMER]);
  });

  it('still recognises, after the upgrade, every id processed under the former default name, also under concurrent redeliveries', async () => {
    await storeAsBefore('StripeWebhooksController.onStripeEvent', 'evt_before_upgrade', { received: 'evt_before_upgrade' });
    const baseUrl = await start([RenamedStripeWebhookModule]);
    expect(logger.lines).toContainEqual(expect.stringContaining(`'${STRIPE_CONSUMER}' (formerly 'StripeWebhooksController.onStripeEvent')`));

    const answers = await Promise.all(Array.from({ length: 20 }, () => post(`${baseUrl}/webhooks/stripe`, { id: 'evt_before_upgrade' })));
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200));
    expect(answers.every((answer) => answer.headers.get('idempotent-replayed') === 'true')).toBe(true);
    expect(answers[0].body).toEqual({ received: 'evt_before_upgrade' });
    expect(await effects('evt_before_upgrade')).toBe(0);
    expect(await consumersOf('evt_before_upgrade')).toEqual(['StripeWebhooksController.onStripeEvent']);

    // A new event is processed once, under the new name.
    const fresh = await post(`${baseUrl}/webhooks/stripe`, { id: 'evt_after_upgrade' });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('idempotent-replayed')).toBeNull();
    expect(await effects('evt_after_upgrade')).toBe(1);
    expect(await consumersOf('evt_after_upgrade')).toEqual([STRIPE_CONSUMER]);
  });

  it('refuses to start a lease-mode handler whose ids are stored under its former name, naming the consumer to set', async () => {
    await storeAsBefore('ChargesController.charge', 'charge-before-upgrade', { charged: true });
    await app?.close();
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.register({ databaseUrl: db.url }), LeaseChargesModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await expect(app.init()).rejects.toThrow(
      "ChargesController.charge is a lease-mode handler whose ids are stored under its name before 0.3.0, 'ChargesController.charge', " +
        "while it now claims 'POST /charges'. Set @IdempotentHandler({ consumer: 'ChargesController.charge' }) on it",
    );
    await db.query(`DELETE FROM processed_messages WHERE consumer = 'ChargesController.charge'`);
  });

  it('warns at start-up of stored consumer names that no handler claims, unless told not to', async () => {
    await storeAsBefore('POST /webhooks/removed', 'evt_orphan', {});
    await start([RenamedStripeWebhookModule]);
    const warning = logger.lines.find((line) => line.startsWith('WARN The store holds ids of consumers that no handler'));
    expect(warning).toContain(`'POST /webhooks/removed'`);
    expect(warning).not.toContain(STRIPE_CONSUMER);
    expect(warning).not.toContain('StripeWebhooksController.onStripeEvent');

    await start([RenamedStripeWebhookModule], { warnOnUnusedConsumers: false });
    expect(logger.lines.filter((line) => line.includes('no handler of this application claims'))).toEqual([]);
  });

  it('warns once at start-up of senders that handlers name and the module does not declare', async () => {
    await start([RenamedStripeWebhookModule]);
    const warnings = logger.lines.filter((line) => line.startsWith('WARN Handlers name the senders'));
    expect(warnings).toEqual([expect.stringContaining(`'stripe'`)]);
    expect(warnings[0]).not.toContain(`'payments'`);
  });

  it('replays a provider retry whose body differs in a volatile field, with no fingerprint for a key taken from the body', async () => {
    const baseUrl = await start([RenamedStripeWebhookModule]);
    const first = await post(`${baseUrl}/webhooks/stripe`, { id: 'evt_retry', pending_webhooks: 2 });
    const retry = await post(`${baseUrl}/webhooks/stripe?attempt=2`, { id: 'evt_retry', pending_webhooks: 1 });
    expect(first.status).toBe(200);
    expect(retry).toMatchObject({ status: 200, body: { received: 'evt_retry' } });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await effects('evt_retry')).toBe(1);
    const [{ fingerprint }] = await db.query<{ fingerprint: string | null }>(`SELECT fingerprint FROM processed_messages WHERE message_id = 'evt_retry'`);
    expect(fingerprint).toBeNull();
  });

  it("still refuses a client's Idempotency-Key reused for another body (422)", async () => {
    const baseUrl = await start([]);
    const key = `reused-${Date.now()}`;
    expect((await post(`${baseUrl}/credits`, { account: 'acc-reuse', cents: 100 }, { 'Idempotency-Key': key })).status).toBe(201);
    expect((await post(`${baseUrl}/credits`, { account: 'acc-reuse', cents: 999 }, { 'Idempotency-Key': key })).status).toBe(422);
  });

  it('replays every one of 20 concurrent duplicates of a committed key, in four bursts, never 409', async () => {
    const baseUrl = await start([FixtureModule]);
    for (let burst = 0; burst < 4; burst++) {
      const key = `burst-${burst}-${Date.now()}`;
      const account = `acc-burst-${burst}`;
      expect((await post(`${baseUrl}/credits`, { account, cents: 10 }, { 'Idempotency-Key': key })).status).toBe(201);
      const answers = await Promise.all(Array.from({ length: 20 }, () => post(`${baseUrl}/credits`, { account, cents: 10 }, { 'Idempotency-Key': key })));
      expect(answers.map((answer) => `${answer.status} ${answer.headers.get('idempotent-replayed')}`)).toEqual(Array(20).fill('201 true'));
      const [{ balance }] = await db.query<{ balance: string }>('SELECT balance FROM accounts WHERE account = $1', [account]);
      expect(Number(balance)).toBe(10);
    }
    const [{ n }] = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM processed_messages WHERE consumer = 'POST /credits' AND message_id LIKE 'burst-%'`,
    );
    expect(Number(n)).toBe(4);
  });

  it('replays 20 concurrent redeliveries of a processed webhook event, never 409', async () => {
    const baseUrl = await start([RenamedStripeWebhookModule]);
    expect((await post(`${baseUrl}/webhooks/stripe`, { id: 'evt_burst' })).status).toBe(200);
    for (let run = 0; run < 3; run++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => post(`${baseUrl}/webhooks/stripe`, { id: 'evt_burst' })));
      expect(answers.map((answer) => `${answer.status} ${answer.headers.get('idempotent-replayed')}`)).toEqual(Array(20).fill('200 true'));
    }
    expect(await effects('evt_burst')).toBe(1);
  });
});
