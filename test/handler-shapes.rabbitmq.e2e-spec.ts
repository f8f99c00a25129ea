import type { INestApplication } from '@nestjs/common';
import { type RmqOptions, Transport } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import amqplib from 'amqplib';
import { IdempotencyMetricsService, IdempotencyOptionsError } from 'nestjs-idempotent-consumer';
import { AppModule } from '../apps/demo-api/src/app.module.js';
import { CREDIT_QUEUE_TYPES, consumeCredits } from '../apps/demo-api/src/messaging/rabbitmq.js';
import { MessageShapesController, MessageShapesModule } from './fixtures/message-shapes.module.js';
import { RABBITMQ_URL, rabbitMqAvailable } from './support/brokers.js';
import { CapturingLogger } from './support/capturing-logger.js';
import { startDemoApp } from './support/demo-app.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const describeWithBroker = (await rabbitMqAvailable()) ? describe : describe.skip;

describeWithBroker.each(CREDIT_QUEUE_TYPES)('the guarantee on the message handler shapes real services have (RabbitMQ, %s queue)', (queueType) => {
  let db: TestDatabase;
  let connection: amqplib.ChannelModel;
  let channel: amqplib.ConfirmChannel;
  const queue = `shapes-e2e-${queueType}-${process.pid}-${Date.now()}`;
  const deadQueue = `${queue}.dead`;
  let app: INestApplication | undefined;
  let logger: CapturingLogger;

  async function startConsumer(databaseUrl = db.url): Promise<MessageShapesController> {
    logger = new CapturingLogger();
    ({ app } = await startDemoApp('express', databaseUrl, [MessageShapesModule], logger, { purge: { interval: false } }));
    await consumeCredits(app, RABBITMQ_URL, { name: queue, type: queueType });
    return app.get(MessageShapesController);
  }

  function publish(pattern: string, data: unknown, messageId: string): void {
    channel.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern, data })), { messageId, persistent: true });
  }

  const ready = async (name = queue) => (await channel.checkQueue(name)).messageCount;
  const count = async (sql: string, params: unknown[] = []) => Number((await db.query<{ n: string }>(sql, params))[0].n);
  const effects = (handler: string, key: string) => count('SELECT count(*) AS n FROM effects WHERE handler = $1 AND key = $2', [handler, key]);

  beforeAll(async () => {
    db = await createTestDatabase();
    connection = await amqplib.connect(RABBITMQ_URL);
    channel = await connection.createConfirmChannel();
    const { app: migrator } = await startDemoApp('express', db.url);
    await migrator.close();
    await db.query(`CREATE TABLE effects (handler text NOT NULL, key text NOT NULL); CREATE TABLE unique_effects (key text PRIMARY KEY);`);
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
    await channel.purgeQueue(queue).catch(() => undefined);
    await channel.purgeQueue(deadQueue).catch(() => undefined);
  });

  afterAll(async () => {
    await channel?.deleteQueue(queue);
    await channel?.deleteQueue(deadQueue);
    await connection?.close();
    await db?.drop();
  });

  it('a handler that swallows a database error is never acked as done: retried, then dead-lettered, nothing committed', async () => {
    const fixture = await startConsumer();
    publish('shapes.swallow', { id: 'swallowed-1' }, 'swallowed-1');
    await channel.waitForConfirms();
    await until(async () => (await ready(deadQueue)) === 1, 'the message reaches the dead-letter queue');
    expect(fixture.swallowAttempts).toBe(3);
    expect(await effects('swallow', 'swallowed-1')).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'swallowed-1'`)).toBe(0);
    expect(app!.get(IdempotencyMetricsService).deliveries()).toContainEqual(
      expect.objectContaining({ consumer: 'shapes.swallow', processed: 0, failed: 3 }),
    );
    expect(logger.lines).toContainEqual(expect.stringMatching(/^WARN .*attempt 1 of 3\) and is requeued in 100 ms: PostgreSQL aborted the transaction/));
    expect(logger.lines).toContainEqual(expect.stringMatching(/^ERROR .*dead-letter.*failed 3 times/));
  });

  it('a reply JSON cannot hold fails the delivery: its transaction rolled back, not left open holding the claim; retried, then dead-lettered', async () => {
    await startConsumer();
    publish('shapes.unserialisable', { id: 'bigint-1' }, 'bigint-1');
    await channel.waitForConfirms();
    // Left open, the first attempt's transaction would hold the claim's row lock, and the retry would wait on it for ever.
    await until(async () => (await ready(deadQueue)) === 1, 'the message reaches the dead-letter queue after its two attempts');
    expect(await effects('unserialisable', 'bigint-1')).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'bigint-1'`)).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`)).toBe(0);
    expect(logger.lines).toContainEqual(expect.stringMatching(/^WARN .*attempt 1 of 2\) and is requeued in 100 ms: .*BigInt/));
    publish('credit.grant', { account: 'acc-after-bigint', cents: 5 }, 'after-bigint-1');
    await until(async () => (await count(`SELECT count(*) AS n FROM ledger_entries WHERE account = 'acc-after-bigint'`)) === 1, 'the next message is processed');
  });

  it('a 2-second database outage during deliveries dead-letters nothing: retries back off, and each message is processed once', async () => {
    const proxy = TcpProxy.toDatabase(db.url);
    await proxy.start();
    try {
      await startConsumer(proxy.url(db.url));
      const account = 'acc-outage';
      proxy.refuse();
      const outage = performance.now();
      for (let i = 0; i < 20; i++) {
        publish('credit.grant', { account, cents: 1 }, `outage-${i}`);
      }
      await channel.waitForConfirms();
      await until(() => Promise.resolve(logger.lines.some((line) => line.includes('is requeued in'))), 'deliveries fail and are requeued');
      await until(() => Promise.resolve(performance.now() - outage >= 2_000), 'the outage has lasted 2 s');
      proxy.accept();
      await until(
        async () => (await count('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account])) === 20 && (await ready()) === 0,
        'every message is processed after the outage',
        60_000,
      );
      await app!.close();
      app = undefined;
      expect(await ready()).toBe(0);
      expect(await ready(deadQueue)).toBe(0);
      expect(await count('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account])).toBe(20);
      expect(await db.query('SELECT balance FROM accounts WHERE account = $1', [account])).toEqual([{ balance: '20' }]);
      const delays = logger.lines.filter((line) => line.includes('is requeued in')).map((line) => Number(/requeued in (\d+) ms/.exec(line)![1]));
      console.log(`2 s outage: ${delays.length} requeues, delays ${[...new Set(delays)].sort((a, b) => a - b).join(', ')} ms; nothing dead-lettered`);
      expect(Math.min(...delays)).toBe(1_000);
    } finally {
      await proxy.close();
    }
  });

  it('settles a fan-out message once, after both handlers, though one waits behind an async guard: the channel is never reset', async () => {
    await startConsumer();
    for (let i = 0; i < 10; i++) {
      publish('shapes.fanout', { id: `fan-${i}` }, `fan-${i}`);
    }
    await channel.waitForConfirms();
    await until(async () => (await count(`SELECT count(*) AS n FROM effects WHERE key LIKE 'fan-%'`)) === 20, 'both handlers processed every message');
    // A channel reset by a second ack of one delivery would stop consuming and redeliver: neither happens.
    for (let i = 0; i < 10; i++) {
      publish('credit.grant', { account: 'acc-after-fanout', cents: 1 }, `after-fan-${i}`);
    }
    await channel.waitForConfirms();
    await until(async () => (await count(`SELECT count(*) AS n FROM ledger_entries WHERE account = 'acc-after-fanout'`)) === 10, 'the channel still consumes');
    await app!.close();
    app = undefined;
    expect(await ready()).toBe(0);
    expect(await ready(deadQueue)).toBe(0);
    for (let i = 0; i < 10; i++) {
      expect([await effects('fanout-plain', `fan-${i}`), await effects('fanout-guarded', `fan-${i}`)]).toEqual([1, 1]);
    }
    expect(logger.lines.filter((line) => line.includes('Duplicate of'))).toEqual([]);
    expect(logger.lines.filter((line) => line.includes('Could not settle'))).toEqual([]);
  });

  describe('a consumer that auto-acknowledges (noAck: true) is refused, naming noAck: false', () => {
    const autoAcknowledging: RmqOptions = { transport: Transport.RMQ, options: { urls: [RABBITMQ_URL], queue: `${queue}-auto`, noAck: true } };

    it('at the start of an application that connects it before it starts', async () => {
      const moduleRef = await Test.createTestingModule({ imports: [AppModule.register({ databaseUrl: db.url, idempotency: { purge: { interval: false } } })] }).compile();
      const refused = moduleRef.createNestApplication({ logger: false });
      refused.connectMicroservice(autoAcknowledging);
      const error = await refused.init().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(IdempotencyOptionsError);
      expect((error as Error).message).toMatch(/queue '.*-auto' acknowledges messages on delivery \(noAck: true.*CreditMessagesController\.grant.*Set noAck: false/);
      await refused.close();
    });

    it('when an application that has started connects it and starts it', async () => {
      ({ app } = await startDemoApp('express', db.url, [], false, { purge: { interval: false } }));
      app.connectMicroservice(autoAcknowledging);
      await expect(app.startAllMicroservices()).rejects.toThrow(/noAck: true.*Set noAck: false/);
      await channel.deleteQueue(`${queue}-auto`).catch(() => undefined);
    });

    it("in the start order Nest's docs show for a hybrid application, cleanly: no unhandled rejection, the connection closed", async () => {
      const broker = new URL(RABBITMQ_URL);
      const proxy = new TcpProxy(broker.hostname, Number(broker.port || 5672));
      await proxy.start();
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        const moduleRef = await Test.createTestingModule({ imports: [AppModule.register({ databaseUrl: db.url, idempotency: { purge: { interval: false } } })] }).compile();
        const hybrid = moduleRef.createNestApplication({ logger: false });
        hybrid.connectMicroservice<RmqOptions>({ ...autoAcknowledging, options: { ...autoAcknowledging.options, urls: [proxy.url(RABBITMQ_URL)] } });
        const start = hybrid.startAllMicroservices();
        await expect(start).rejects.toThrow(IdempotencyOptionsError);
        await expect(start).rejects.toThrow(/noAck: true.*Set noAck: false/);
        await hybrid.close();
        await until(async () => proxy.openConnections() === 0, "the refused consumer's connection to RabbitMQ is closed");
        // A rejection nobody handled is reported after the microtasks of the turn it happened in.
        await new Promise((resolve) => setImmediate(resolve));
        expect(unhandled).toEqual([]);
      } finally {
        process.off('unhandledRejection', onUnhandled);
        await proxy.close();
        await channel.deleteQueue(`${queue}-auto`).catch(() => undefined);
      }
    });
  });
});
