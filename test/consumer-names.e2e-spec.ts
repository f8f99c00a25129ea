import type { INestApplication, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { readFile } from 'node:fs/promises';
import { type IdempotencyModuleOptions, IdempotentRunner } from 'nestjs-idempotent-consumer';
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

  async function start(modules: Type[], options: Pick<IdempotencyModuleOptions, 'warnOnUnusedConsumers' | 'knownConsumers'> = {}): Promise<string> {
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
    expect(logger.lines).toContainEqual(expect.stringContaining(`1 moved from 'StripeWebhooksController.onStripeEvent' to '${STRIPE_CONSUMER}'`));

    const answers = await Promise.all(Array.from({ length: 20 }, () => post(`${baseUrl}/webhooks/stripe`, { id: 'evt_before_upgrade' })));
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200));
    expect(answers.every((answer) => answer.headers.get('idempotent-replayed') === 'true')).toBe(true);
    expect(answers[0].body).toEqual({ received: 'evt_before_upgrade' });
    expect(await effects('evt_before_upgrade')).toBe(0);
    expect(await consumersOf('evt_before_upgrade')).toEqual([STRIPE_CONSUMER]);

    // A new event is processed once, under the new name.
    const fresh = await post(`${baseUrl}/webhooks/stripe`, { id: 'evt_after_upgrade' });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('idempotent-replayed')).toBeNull();
    expect(await effects('evt_after_upgrade')).toBe(1);
    expect(await consumersOf('evt_after_upgrade')).toEqual([STRIPE_CONSUMER]);
  });

  it("moves a lease-mode handler's ids from its former name, and refuses to start while an earlier version holds a live lease under it", async () => {
    await storeAsBefore('ChargesController.charge', 'charge-before-upgrade', { charged: true });
    await db.query(
      `INSERT INTO processed_messages (consumer, message_id, sender, lease_token, lease_expires_at, expires_at)
       VALUES ('ChargesController.charge', 'charge-in-flight', 'default', gen_random_uuid(), now() + interval '1 hour', now() + interval '7 days')`,
    );
    const init = async () => {
      await app?.close();
      const moduleRef = await Test.createTestingModule({ imports: [AppModule.register({ databaseUrl: db.url }), LeaseChargesModule] }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.listen(0, '127.0.0.1');
      return (await app.getUrl()).replace('[::1]', '127.0.0.1');
    };
    await expect(init()).rejects.toThrow(
      "ChargesController.charge is a lease-mode handler with ids stored under its name before 0.3.0, 'ChargesController.charge'. " +
        "They were moved to 'POST /charges', except those an instance of an earlier version holds under a live lease right now",
    );
    expect(await consumersOf('charge-before-upgrade')).toEqual(['POST /charges']);
    expect(await consumersOf('charge-in-flight')).toEqual(['ChargesController.charge']);

    // The earlier version's delivery ends (its lease expires): the next start moves it too.
    await db.query(`UPDATE processed_messages SET lease_expires_at = now() - interval '1 second' WHERE message_id = 'charge-in-flight'`);
    const baseUrl = await init();
    expect(await consumersOf('charge-in-flight')).toEqual(['POST /charges']);
    const replay = await post(`${baseUrl}/charges`, {}, { 'Idempotency-Key': 'charge-before-upgrade' });
    expect(replay).toMatchObject({ status: 200, body: { charged: true } });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    await db.query(`DELETE FROM processed_messages WHERE consumer = 'POST /charges'`);
  });

  it("moves a renamed handler's ids with the guide's statement (keys.md), the current name's row winning where both hold an id", async () => {
    const guide = await readFile('libs/idempotency/docs/keys.md', 'utf8');
    const statement = /Move that name's ids[\s\S]*?```sql\n([\s\S]*?)```/.exec(guide)?.[1];
    expect(statement).toContain('FOR UPDATE SKIP LOCKED');
    await storeAsBefore('WebhooksController.onEvent', 'evt_moved_1', { moved: 1 });
    await storeAsBefore('WebhooksController.onEvent', 'evt_moved_2', { moved: 2 });
    await storeAsBefore('POST /webhooks/payments', 'evt_moved_2', { kept: 2 });
    expect(await db.query(statement!.replace(/^ {2}/gm, ''))).toEqual([{ moved: '2' }]);
    expect(await db.query(statement!)).toEqual([{ moved: '0' }]);
    expect(
      await db.query(`SELECT consumer, message_id, convert_from(response_body, 'UTF8') AS body FROM processed_messages WHERE message_id LIKE 'evt_moved_%' ORDER BY message_id`),
    ).toEqual([
      { consumer: 'POST /webhooks/payments', message_id: 'evt_moved_1', body: '{"moved":1}' },
      { consumer: 'POST /webhooks/payments', message_id: 'evt_moved_2', body: '{"kept":2}' },
    ]);
    await db.query(`DELETE FROM processed_messages WHERE message_id LIKE 'evt_moved_%'`);
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

  it("does not warn of the consumers run() claims under once they are listed in knownConsumers, and still warns of the others", async () => {
    await start([RenamedStripeWebhookModule]);
    await app!.get(IdempotentRunner).run({ consumer: 'settle-day', key: '2026-12-05' }, async () => ({ settled: 3 }));
    await storeAsBefore('POST /webhooks/gone', 'evt_gone', {});

    await start([RenamedStripeWebhookModule], { knownConsumers: ['settle-day'] });
    const warning = logger.lines.find((line) => line.startsWith('WARN The store holds ids of consumers that no handler'));
    expect(warning).toContain(`'POST /webhooks/gone'`);
    expect(warning).not.toContain(`'settle-day'`);

    await start([RenamedStripeWebhookModule]);
    expect(logger.lines.find((line) => line.startsWith('WARN The store holds ids of consumers that no handler'))).toContain(`'settle-day'`);
    await db.query(`DELETE FROM processed_messages WHERE consumer IN ('settle-day', 'POST /webhooks/gone')`);
  });

  it('warns once at start-up of senders that handlers name and the module does not declare', async () => {
    await start([RenamedStripeWebhookModule]);
    const warnings = logger.lines.filter((line) => line.startsWith('WARN Handlers name the senders'));
    expect(warnings).toEqual([expect.stringContaining(`'stripe'`)]);
    expect(warnings[0]).not.toContain(`'payments'`);
  });

  it('replays a provider retry whose body differs in a volatile field, for a webhook handler with fingerprint: false', async () => {
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
