import type { INestApplication } from '@nestjs/common';
import amqplib from 'amqplib';
import { IdempotencyOptionsError } from 'nestjs-idempotent-consumer';
import { consumeCredits } from '../apps/demo-api/src/messaging/rabbitmq.js';
import { MismatchedEntriesModule, PAYMENT_SUCCEEDED, type PaymentSucceeded, PaymentEventsModule } from './fixtures/payment-events.module.js';
import { RABBITMQ_URL, rabbitMqAvailable } from './support/brokers.js';
import { CapturingLogger } from './support/capturing-logger.js';
import { post, startDemoApp } from './support/demo-app.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const describeWithBroker = (await rabbitMqAvailable()) ? describe : describe.skip;

describeWithBroker('one business event reaching the service by a webhook and by a queue', () => {
  let db: TestDatabase;
  let connection: amqplib.ChannelModel;
  let channel: amqplib.ConfirmChannel;
  const queue = `payment-events-e2e-${process.pid}-${Date.now()}`;
  let app: INestApplication | undefined;
  let baseUrl: string;
  let logger: CapturingLogger;

  const count = async (sql: string, params: unknown[] = []) => Number((await db.query<{ n: string }>(sql, params))[0].n);
  const ledgerRows = (account: string) => count('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account]);
  const claims = (key: string) => count('SELECT count(*) AS n FROM processed_messages WHERE consumer = $1 AND message_id = $2', [PAYMENT_SUCCEEDED, key]);
  const ready = async (name = queue) => (await channel.checkQueue(name)).messageCount;
  const duplicatesOf = (key: string) => logger.lines.filter((line) => line.includes(`Duplicate of '${key}'`)).length;

  async function publish(event: PaymentSucceeded): Promise<void> {
    channel.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern: PAYMENT_SUCCEEDED, data: event })), { persistent: true });
    await channel.waitForConfirms();
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    connection = await amqplib.connect(RABBITMQ_URL);
    channel = await connection.createConfirmChannel();
    logger = new CapturingLogger();
    ({ app, baseUrl } = await startDemoApp('express', db.url, [PaymentEventsModule], logger));
    await consumeCredits(app, RABBITMQ_URL, { name: queue, type: 'classic' });
  });

  afterAll(async () => {
    await app?.close();
    await channel?.deleteQueue(queue);
    await channel?.deleteQueue(`${queue}.dead`);
    await connection?.close();
    await db?.drop();
  });

  it('10 webhook deliveries and 10 queue deliveries of one event, all at once → one effect, one claim, every delivery answered', async () => {
    const event = { id: 'evt-both', account: 'acc-both', cents: 300 };
    const [answers] = await Promise.all([
      Promise.all(Array.from({ length: 10 }, () => post(`${baseUrl}/events/payments`, event))),
      Promise.all(Array.from({ length: 10 }, () => publish(event))),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
    // Every delivery but the one that ran is logged a duplicate, the queued ones once acked.
    await until(async () => duplicatesOf('evt-both') === 19 && (await ready()) === 0, 'every delivery is settled');
    expect(await ledgerRows('acc-both')).toBe(1);
    expect(await claims('evt-both')).toBe(1);
    expect(await db.query('SELECT balance FROM accounts WHERE account = $1', ['acc-both'])).toEqual([{ balance: '300' }]);
    expect(await ready(`${queue}.dead`)).toBe(0);
  });

  it('the queue first: the webhook is answered 200 with the reply the queue handler recorded, and runs nothing', async () => {
    const event = { id: 'evt-queue-first', account: 'acc-queue-first', cents: 40 };
    await publish(event);
    await until(async () => (await claims('evt-queue-first')) === 1, 'the queued event is processed');
    const answer = await post(`${baseUrl}/events/payments`, event);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('idempotent-replayed')).toBe('true');
    expect(answer.body).toEqual({ via: 'queue', balance: 40 });
    expect(await ledgerRows('acc-queue-first')).toBe(1);
  });

  it('the webhook first: the queued copy is acked as a duplicate, and runs nothing', async () => {
    const event = { id: 'evt-webhook-first', account: 'acc-webhook-first', cents: 60 };
    const answer = await post(`${baseUrl}/events/payments`, event);
    expect(answer).toMatchObject({ status: 200, body: { via: 'webhook', balance: 60 } });
    await publish(event);
    await until(async () => duplicatesOf('evt-webhook-first') === 1, 'the queued copy is found a duplicate');
    await until(async () => (await ready()) === 0, 'the queued copy is acked');
    expect(await ledgerRows('acc-webhook-first')).toBe(1);
    expect(await ready(`${queue}.dead`)).toBe(0);
  });

  it('two entries of one consumer that claim it differently are refused at boot, naming both', async () => {
    const error = await startDemoApp('express', db.url, [MismatchedEntriesModule]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IdempotencyOptionsError);
    expect((error as Error).message).toMatch(
      /^MismatchedEntriesController.fromWebhook .* and MismatchedEntriesController.fromQueue .* share the consumer 'payment.succeeded' but claim it differently/,
    );
  });
});
