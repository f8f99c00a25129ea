import amqplib from 'amqplib';
import { resolve } from 'node:path';
import { FIXTURE_TABLES_SQL } from './fixtures/fixture.module.js';
import { RABBITMQ_URL, rabbitMqAvailable } from './support/brokers.js';
import { startDemoApp } from './support/demo-app.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { handlerBlocked, lockAccount } from './support/account-lock.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

/**
 * The consumers run as processes of their own (test/apps/golevelup, built by `npm run build:test-apps`):
 * golevelup require()s the ESM-only Nest 12, which Node 20 does but Jest's module loader cannot.
 */
const GOLEVELUP_APP = resolve('dist/test-apps/test/apps/golevelup/golevelup-app.main.js');
const prefix = `golevelup-e2e-${process.pid}-${Date.now()}`;
/** The fixture's queues (test/fixtures/golevelup-rabbitmq.module.ts), unique to this run. */
const QUEUES = { credits: `${prefix}.credits`, poison: `${prefix}.poison`, nack: `${prefix}.nack`, dead: `${prefix}.dead` };
/** The queue of the subscriptions refused at start-up: never declared. */
const REFUSED_QUEUE = `${prefix}.refused`;

const describeWithBroker = (await rabbitMqAvailable()) ? describe : describe.skip;

describeWithBroker('exactly-once @golevelup/nestjs-rabbitmq @RabbitSubscribe handlers', () => {
  let db: TestDatabase;
  let connection: amqplib.ChannelModel;
  let channel: amqplib.ConfirmChannel;
  const children: DemoProcess[] = [];
  let consumer: DemoProcess | undefined;

  function startProcess(databaseUrl: string, consumers = 'fixture'): Promise<DemoProcess> {
    return startAppProcess(
      GOLEVELUP_APP,
      { DATABASE_URL: databaseUrl, RABBITMQ_URL, GOLEVELUP_QUEUE_PREFIX: prefix, GOLEVELUP_CONSUMERS: consumers, NO_COLOR: '1' },
      '/accounts/ping',
    );
  }

  async function startConsumer(databaseUrl = db.url): Promise<DemoProcess> {
    consumer = await startProcess(databaseUrl);
    children.push(consumer);
    return consumer;
  }

  /** Stops the consumer gracefully (SIGTERM): an unacked message returns to its queue. */
  async function stopConsumer(): Promise<string> {
    await consumer?.kill('SIGTERM');
    return consumer?.output() ?? '';
  }

  const lines = (output: string, pattern: RegExp) => output.split('\n').filter((line) => pattern.test(line));
  const logged = (pattern: RegExp) => Promise.resolve(lines(consumer?.output() ?? '', pattern).length);

  async function publish(queue: string, data: unknown, messageId?: string): Promise<void> {
    channel.sendToQueue(queue, Buffer.from(JSON.stringify(data)), { messageId, persistent: true });
    await channel.waitForConfirms();
  }

  const ready = async (name: string) => (await channel.checkQueue(name)).messageCount;
  const count = async (sql: string, params: unknown[] = []) => Number((await db.query<{ n: string }>(sql, params))[0].n);
  const ledgerRows = (account: string) => count('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account]);
  const balance = (account: string) => db.query('SELECT balance FROM accounts WHERE account = $1', [account]);

  beforeAll(async () => {
    db = await createTestDatabase();
    connection = await amqplib.connect(RABBITMQ_URL);
    channel = await connection.createConfirmChannel();
    const { app: migrator } = await startDemoApp('express', db.url);
    await migrator.close();
    await db.query(FIXTURE_TABLES_SQL);
    await channel.assertQueue(QUEUES.dead, { durable: true });
    // The subscriptions declare their queues; one start declares them all before the first publish.
    await startConsumer();
    await stopConsumer();
    consumer = undefined;
  });

  afterEach(async () => {
    consumer = undefined;
    await Promise.all(children.splice(0).map((child) => child.kill('SIGKILL')));
    for (const queue of Object.values(QUEUES)) {
      await channel.purgeQueue(queue).catch(() => undefined);
    }
  });

  afterAll(async () => {
    for (const queue of Object.values(QUEUES)) {
      await channel?.deleteQueue(queue).catch(() => undefined);
    }
    await connection?.close();
    await db?.drop();
  });

  it('one message published 50 times with one messageId → one effect, every copy acked, the queue empty', async () => {
    await startConsumer();
    for (let i = 0; i < 50; i++) {
      await publish(QUEUES.credits, { account: 'acc-fifty', cents: 25 }, 'g-fifty');
    }
    await until(async () => (await logged(/Duplicate of 'g-fifty'/)) === 49 && (await ledgerRows('acc-fifty')) === 1, 'every copy is handled');
    const output = await stopConsumer(); // an unacked copy would return to the queue now
    expect(lines(output, /Duplicate of 'g-fifty'/)).toHaveLength(49);
    expect(await ready(QUEUES.credits)).toBe(0);
    expect(await ready(QUEUES.dead)).toBe(0);
    expect(await ledgerRows('acc-fifty')).toBe(1);
    expect(await balance('acc-fifty')).toEqual([{ balance: '25' }]);
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'g-fifty' AND consumer = $1`, [`rabbitmq queue ${QUEUES.credits}`])).toBe(1);
  });

  it('a consumer SIGKILLed mid-handler: the broker redelivers (redelivered flag) and the effect happens once', async () => {
    const account = 'acc-sigkill';
    const first = await startConsumer();
    await publish(QUEUES.credits, { account, cents: 100 }, 'g-seed-sigkill');
    await until(async () => (await ledgerRows(account)) === 1, 'the seed credit is processed');

    const holder = await lockAccount(db, account);
    await publish(QUEUES.credits, { account, cents: 7 }, 'g-sigkill');
    await until(() => handlerBlocked(db), 'the handler waits on the account lock inside its claim transaction');
    await first.kill('SIGKILL');
    await holder.query('ROLLBACK');
    await holder.end();

    let redelivery: amqplib.GetMessage | false = false;
    await until(async () => (redelivery = await channel.get(QUEUES.credits, { noAck: false })) !== false, 'the broker redelivers the message');
    const taken = redelivery as unknown as amqplib.GetMessage;
    expect(taken.properties.messageId).toBe('g-sigkill');
    expect(taken.fields.redelivered).toBe(true);
    channel.nack(taken, false, true);

    await startConsumer();
    await until(async () => (await ledgerRows(account)) === 2, 'the redelivered credit is processed');
    await stopConsumer();
    expect(await ready(QUEUES.credits)).toBe(0);
    expect(await balance(account)).toEqual([{ balance: '107' }]);
    expect(await count('SELECT count(*) AS n FROM processed_messages WHERE message_id = $1', ['g-sigkill'])).toBe(1);
  });

  it('a 2-second database outage during deliveries dead-letters nothing: retries back off, and each message is processed once', async () => {
    const database = new URL(db.url);
    const proxy = new TcpProxy(database.hostname, Number(database.port || 5432));
    await proxy.start();
    try {
      await startConsumer(proxy.url(db.url));
      const account = 'acc-outage';
      proxy.refuse();
      const outage = performance.now();
      for (let i = 0; i < 20; i++) {
        channel.sendToQueue(QUEUES.credits, Buffer.from(JSON.stringify({ account, cents: 1 })), { messageId: `g-outage-${i}`, persistent: true });
      }
      await channel.waitForConfirms();
      await until(async () => (await logged(/is requeued in/)) > 0, 'deliveries fail and are requeued');
      await until(() => Promise.resolve(performance.now() - outage >= 2_000), 'the outage has lasted 2 s');
      proxy.accept();
      await until(
        async () => (await ledgerRows(account)) === 20 && (await ready(QUEUES.credits)) === 0,
        'every message is processed after the outage',
        60_000,
      );
      const output = await stopConsumer();
      expect(await ready(QUEUES.credits)).toBe(0);
      expect(await ready(QUEUES.dead)).toBe(0);
      expect(await ledgerRows(account)).toBe(20);
      expect(await balance(account)).toEqual([{ balance: '20' }]);
      const delays = lines(output, /is requeued in/).map((line) => Number(/requeued in (\d+) ms/.exec(line)![1]));
      console.log(`golevelup, 2 s outage: ${delays.length} requeues, delays ${[...new Set(delays)].sort((a, b) => a - b).join(', ')} ms; nothing dead-lettered`);
      expect(Math.min(...delays)).toBe(1_000);
      expect(Math.max(...delays)).toBeGreaterThanOrEqual(2_000);
    } finally {
      await proxy.close();
    }
  });

  it('a poison message is dead-lettered after maxAttempts, with nothing committed', async () => {
    await startConsumer();
    await publish(QUEUES.poison, { id: 'g-poison-1' }, 'g-poison-1');
    await until(async () => (await ready(QUEUES.dead)) === 1, 'the message reaches the dead-letter queue');
    const output = await stopConsumer();
    expect(lines(output, /Fixture handler poison ran/)).toHaveLength(3);
    expect(await ready(QUEUES.poison)).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM effects WHERE key = 'g-poison-1'`)).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'g-poison-1'`)).toBe(0);
    expect(lines(output, /WARN \[Idempotency\] .*attempt 1 of 3\) and is requeued in 100 ms: poison/)).toHaveLength(1);
    expect(lines(output, /WARN \[Idempotency\] .*attempt 2 of 3\) and is requeued in 200 ms: poison/)).toHaveLength(1);
    expect(lines(output, /ERROR \[Idempotency\] .*dead-letter.*failed 3 times/)).toHaveLength(1);
    expect(lines(output, new RegExp(`WARN \\[Idempotency\\] golevelup-rabbitmq message 'g-poison-1' for 'rabbitmq queue ${QUEUES.poison}' failed \\(attempt 1 of 3\\)`))).toHaveLength(1);
  });

  it('a message without messageId is dead-lettered at once, without running the handler, naming the property', async () => {
    await startConsumer();
    const claimsBefore = await count('SELECT count(*) AS n FROM processed_messages');
    await publish(QUEUES.credits, { account: 'acc-no-id', cents: 5 });
    await until(async () => (await ready(QUEUES.dead)) === 1, 'the message reaches the dead-letter queue');
    const output = await stopConsumer();
    expect(await ledgerRows('acc-no-id')).toBe(0);
    expect(await count('SELECT count(*) AS n FROM processed_messages')).toBe(claimsBefore);
    expect(lines(output, /ERROR \[Idempotency\] .*dead-letter.*the AMQP messageId property is missing/)).toHaveLength(1);
  });

  it("a handler's Nack rolls its claim back: Nack(true) is retried and then processed once, Nack(false) dead-letters with nothing committed", async () => {
    await startConsumer();
    await publish(QUEUES.nack, { id: 'g-nack-requeue', requeue: true }, 'g-nack-requeue');
    await publish(QUEUES.nack, { id: 'g-nack-drop', requeue: false }, 'g-nack-drop');
    await until(
      async () => (await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'g-nack-requeue'`)) === 1 && (await ready(QUEUES.dead)) === 1,
      'the requeued message commits on its retry, the other is dead-lettered',
    );
    const output = await stopConsumer();
    expect(lines(output, /Fixture handler nack ran for g-nack-requeue/)).toHaveLength(2);
    expect(lines(output, /Fixture handler nack ran for g-nack-drop/)).toHaveLength(1);
    expect(await count(`SELECT count(*) AS n FROM effects WHERE key = 'g-nack-requeue'`)).toBe(1);
    expect(await count(`SELECT count(*) AS n FROM effects WHERE key = 'g-nack-drop'`)).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'g-nack-drop'`)).toBe(0);
    expect(await ready(QUEUES.nack)).toBe(0);
    expect(lines(output, /WARN \[Idempotency\] .*attempt 1 of 5\) and is requeued in 100 ms: the handler answered Nack \(requeue: true\)/)).toHaveLength(1);
  });

  describe('subscriptions that would lose messages are refused at start-up, before they consume', () => {
    it('noAck: true', async () => {
      await expect(startProcess(db.url, 'auto-ack')).rejects.toThrow(/IdempotencyOptionsError.*AutoAcknowledgingConsumer\.handle consumes with noAck: true.*Remove noAck/);
    });

    it('errorBehavior ACK', async () => {
      await expect(startProcess(db.url, 'ack-on-error')).rejects.toThrow(
        /IdempotencyOptionsError.*AckingOnErrorConsumer\.handle acknowledges messages whose handling failed.*errorBehavior to NACK/,
      );
    });

    it('a dead-letter queue that does not exist (nothing would receive what is dead-lettered)', async () => {
      await expect(startProcess(db.url, 'dead-letter-queue-missing')).rejects.toThrow(
        new RegExp(`IdempotencyOptionsError: The queue '${REFUSED_QUEUE}' of DeadLetteringToMissingQueueConsumer\\.handle dead-letters to queue 'i27rl-${prefix}\\.missing-dead' \\(through the default exchange\\), which does not exist`),
      );
    });

    it('a dead-letter exchange that does not exist, set in the queue arguments', async () => {
      await expect(startProcess(db.url, 'dead-letter-exchange-missing')).rejects.toThrow(
        new RegExp(`IdempotencyOptionsError: The queue '${REFUSED_QUEUE}' of DeadLetteringToMissingExchangeConsumer\\.handle dead-letters to exchange 'i27rl-${prefix}\\.missing-dlx', which does not exist`),
      );
    });

    afterAll(async () => {
      // Nothing subscribed to the refused queue: it was never declared (a failed check closes its channel: a channel of its own).
      const probe = await connection.createChannel();
      probe.on('error', () => undefined);
      await expect(probe.checkQueue(REFUSED_QUEUE)).rejects.toThrow(/NOT_FOUND/);
    });
  });
});
