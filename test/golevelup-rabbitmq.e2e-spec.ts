import amqplib from 'amqplib';
import { transportContract, type TransportHarness } from 'nestjs-idempotent-consumer/testing';
import { resolve } from 'node:path';
import { FIXTURE_TABLES_SQL } from './fixtures/fixture.module.js';
import { RABBITMQ_URL, rabbitMqAvailable } from './support/brokers.js';
import { startDemoApp } from './support/demo-app.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { lockAccount } from './support/account-lock.js';
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

  async function publish(queue: string, data: unknown, messageId?: string): Promise<void> {
    channel.sendToQueue(queue, Buffer.from(JSON.stringify(data)), { messageId, persistent: true });
    await channel.waitForConfirms();
  }

  const ready = async (name: string) => (await channel.checkQueue(name)).messageCount;
  const count = async (sql: string, params: unknown[] = []) => Number((await db.query<{ n: string }>(sql, params))[0].n);
  const ledgerRows = (account: string) => count('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account]);
  const balanceOf = async (account: string) => (await db.query<{ balance: string }>('SELECT balance FROM accounts WHERE account = $1', [account]))[0]?.balance;

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

  /** The credits a harness message grants to its account, named by its key. */
  const CENTS = 7;

  /**
   * The fixture's credits subscription keyed by the AMQP messageId and its poison subscription
   * (maxAttempts 3, retryDelay 100 ms), each consumer a process of its own; a failure is answered
   * with `Nack(true)` after its delay, then `Nack(false)`, which dead-letters it to the dead queue.
   */
  const harness: TransportHarness = {
    async start({ databaseUrl } = {}) {
      const started = await startConsumer(databaseUrl);
      return { logs: () => started.output().split('\n'), stop: () => started.kill('SIGTERM'), kill: () => started.kill('SIGKILL') };
    },
    publish: ({ key }) => publish(QUEUES.credits, { account: key, cents: CENTS }, key),
    async publishCopies({ key }, copies) {
      for (let i = 0; i < copies; i++) {
        await publish(QUEUES.credits, { account: key, cents: CENTS }, key);
      }
    },
    publishPoison: ({ key }) => publish(QUEUES.poison, { id: key }, key),
    publishWithoutKey: ({ key }) => publish(QUEUES.credits, { account: key, cents: CENTS }),
    effects: async ({ key }) => (await ledgerRows(key)) + (await count('SELECT count(*) AS n FROM effects WHERE key = $1', [key])),
    async block({ key }) {
      await db.query('INSERT INTO accounts (account, balance) VALUES ($1, 100)', [key]);
      const holder = await lockAccount(db, key);
      return async () => {
        await holder.query('ROLLBACK');
        await holder.end();
      };
    },
    drained: async () => (await ready(QUEUES.credits)) === 0 && (await ready(QUEUES.poison)) === 0,
    deadLettered: () => ready(QUEUES.dead),
    query: (sql, params) => db.query(sql, params),
    get databaseUrl() {
      return db.url;
    },
    poisonAttempts: 3,
    missingKey: 'the AMQP messageId property is missing',
    also: {
      async fiftyCopies({ key }) {
        expect(await balanceOf(key)).toBe(String(CENTS));
        expect(await count('SELECT count(*) AS n FROM processed_messages WHERE message_id = $1 AND consumer = $2', [key, `rabbitmq queue ${QUEUES.credits}`])).toBe(1);
      },
      async afterKill({ key }) {
        let redelivery: amqplib.GetMessage | false = false;
        await until(async () => (redelivery = await channel.get(QUEUES.credits, { noAck: false })) !== false, 'the broker redelivers the message');
        const taken = redelivery as unknown as amqplib.GetMessage;
        expect(taken.properties.messageId).toBe(key);
        expect(taken.fields.redelivered).toBe(true);
        channel.nack(taken, false, true);
      },
      killedMidHandler: async ({ key }) => expect(await balanceOf(key)).toBe(String(100 + CENTS)),
      async databaseOutage(messages, consumer) {
        for (const { key } of messages) {
          expect([key, await balanceOf(key)]).toEqual([key, String(CENTS)]);
        }
        // Each retry waits 1 s doubled per earlier attempt; how many attempts fall inside the outage depends on the machine's pace.
        const delays = consumer.logs().flatMap((line) => {
          const match = /attempt (\d+) of \d+\) and is requeued in (\d+) ms/.exec(line);
          return match ? [{ attempt: Number(match[1]), delay: Number(match[2]) }] : [];
        });
        console.log(`golevelup, 2 s outage: ${delays.length} requeues, delays ${[...new Set(delays.map(({ delay }) => delay))].sort((a, b) => a - b).join(', ')} ms; nothing dead-lettered`);
        expect(delays.length).toBeGreaterThan(0);
        for (const { attempt, delay } of delays) {
          expect({ attempt, delay }).toEqual({ attempt, delay: 1_000 * 2 ** (attempt - 1) });
        }
      },
      async poison({ key }, consumer) {
        const output = consumer.logs().join('\n');
        expect(lines(output, /Fixture handler poison ran/)).toHaveLength(3);
        expect(lines(output, /WARN \[Idempotency\] .*attempt 1 of 3\) and is requeued in 100 ms: poison/)).toHaveLength(1);
        expect(lines(output, /WARN \[Idempotency\] .*attempt 2 of 3\) and is requeued in 200 ms: poison/)).toHaveLength(1);
        expect(lines(output, /ERROR \[Idempotency\] .*dead-letter.*failed 3 times/)).toHaveLength(1);
        expect(lines(output, new RegExp(`WARN \\[Idempotency\\] golevelup-rabbitmq message '${key}' for 'rabbitmq queue ${QUEUES.poison}' failed \\(attempt 1 of 3\\)`))).toHaveLength(1);
      },
      missingKey: async (_, consumer) =>
        expect(lines(consumer.logs().join('\n'), /ERROR \[Idempotency\] .*dead-letter.*the AMQP messageId property is missing/)).toHaveLength(1),
    },
  };

  describe('the transport contract', () => {
    for (const { name, run } of transportContract(harness)) {
      it(name, run);
    }
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
