import type { INestApplication } from '@nestjs/common';
import amqplib from 'amqplib';
import { transportContract, type TransportHarness } from 'nestjs-idempotent-consumer/testing';
import { CREDIT_QUEUE_TYPES, consumeCredits } from '../apps/demo-api/src/messaging/rabbitmq.js';
import { FIXTURE_TABLES_SQL } from './fixtures/fixture.module.js';
import { MessageFixtureController, MessageFixtureModule } from './fixtures/message-fixture.module.js';
import { RABBITMQ_URL, rabbitMqAvailable } from './support/brokers.js';
import { CapturingLogger } from './support/capturing-logger.js';
import { startDemoApp } from './support/demo-app.js';
import { type DemoProcess, startDemoProcess } from './support/demo-process.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { handlerBlocked, lockAccount } from './support/account-lock.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const describeWithBroker = (await rabbitMqAvailable()) ? describe : describe.skip;

describeWithBroker.each(CREDIT_QUEUE_TYPES)('exactly-once RabbitMQ consumers on a %s queue', (queueType) => {
  let db: TestDatabase;
  let connection: amqplib.ChannelModel;
  let channel: amqplib.ConfirmChannel;
  const queue = `credits-e2e-${queueType}-${process.pid}-${Date.now()}`;
  const deadQueue = `${queue}.dead`;
  const children: DemoProcess[] = [];
  let app: INestApplication | undefined;
  let logger: CapturingLogger;

  async function startConsumer(brokerUrl = RABBITMQ_URL, databaseUrl = db.url): Promise<MessageFixtureController> {
    logger = new CapturingLogger();
    ({ app } = await startDemoApp('express', databaseUrl, [MessageFixtureModule], logger));
    await consumeCredits(app, brokerUrl, { name: queue, type: queueType });
    return app.get(MessageFixtureController);
  }

  async function stopConsumer(): Promise<void> {
    await app?.close();
    app = undefined;
  }

  async function publish(pattern: string, data: unknown, messageId?: string): Promise<void> {
    channel.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern, data })), { messageId, persistent: true });
    await channel.waitForConfirms();
  }

  const ready = async (name = queue) => (await channel.checkQueue(name)).messageCount;
  const count = async (sql: string, params: unknown[] = []) => Number((await db.query<{ n: string }>(sql, params))[0].n);
  const ledgerRows = (account: string) => count('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account]);

  /** Takes the next ready message off the queue as a bystander would, to look at its delivery flags. */
  async function takeMessage(): Promise<amqplib.GetMessage> {
    let message: amqplib.GetMessage | false = false;
    await until(async () => (message = await channel.get(queue, { noAck: false })) !== false, 'the broker redelivers the message');
    return message as unknown as amqplib.GetMessage;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    connection = await amqplib.connect(RABBITMQ_URL);
    channel = await connection.createConfirmChannel();
    // The demo's migrations create the credit tables; start it once to run them.
    const { app: migrator } = await startDemoApp('express', db.url);
    await migrator.close();
    await db.query(FIXTURE_TABLES_SQL);
  });

  afterEach(async () => {
    await stopConsumer();
    await Promise.all(children.splice(0).map((child) => child.kill('SIGKILL')));
    await channel.purgeQueue(queue).catch(() => undefined);
    await channel.purgeQueue(deadQueue).catch(() => undefined);
  });

  afterAll(async () => {
    await channel?.deleteQueue(queue);
    await channel?.deleteQueue(deadQueue);
    await connection?.close();
    await db?.drop();
  });

  /** The credits a harness message grants to its account, named by its key. */
  const CENTS = 7;
  const balanceOf = async (account: string) => (await db.query<{ balance: string }>('SELECT balance FROM accounts WHERE account = $1', [account]))[0]?.balance;
  /** The fixture of the consumer the harness last started in this process: what it counted stays readable after it stopped. */
  let lastFixture: MessageFixtureController;

  /**
   * The demo's `credit.grant` consumer keyed by the AMQP messageId (in this process, or the built
   * demo as a process of its own where a check kills it), and the fixture's `fixture.poison`
   * handler (maxAttempts 3); a failure is requeued with its delay, then dead-lettered to `<queue>.dead`.
   */
  const harness: TransportHarness = {
    async start({ databaseUrl = db.url, crashable } = {}) {
      if (!crashable) {
        lastFixture = await startConsumer(RABBITMQ_URL, databaseUrl);
        const lines = logger.lines;
        return { logs: () => lines, stop: stopConsumer, kill: () => Promise.reject(new Error('an in-process consumer cannot be killed')) };
      }
      const child = await startDemoProcess({ DATABASE_URL: databaseUrl, RABBITMQ_URL, RABBITMQ_QUEUE: queue, RABBITMQ_QUEUE_TYPE: queueType });
      children.push(child);
      return { logs: () => child.output().split('\n'), stop: () => child.kill('SIGTERM'), kill: () => child.kill('SIGKILL') };
    },
    publish: ({ key }) => publish('credit.grant', { account: key, cents: CENTS }, key),
    async publishCopies({ key }, copies) {
      for (let i = 0; i < copies; i++) {
        await publish('credit.grant', { account: key, cents: CENTS }, key);
      }
    },
    publishPoison: ({ key }) => publish('fixture.poison', { id: key }, key),
    publishWithoutKey: ({ key }) => publish('credit.grant', { account: key, cents: CENTS }),
    effects: async ({ key }) => (await ledgerRows(key)) + (await count('SELECT count(*) AS n FROM effects WHERE key = $1', [key])),
    async block({ key }) {
      await db.query('INSERT INTO accounts (account, balance) VALUES ($1, 100)', [key]);
      const holder = await lockAccount(db, key);
      return async () => {
        await holder.query('ROLLBACK');
        await holder.end();
      };
    },
    drained: async () => (await ready()) === 0,
    deadLettered: () => ready(deadQueue),
    query: (sql, params) => db.query(sql, params),
    get databaseUrl() {
      return db.url;
    },
    poisonAttempts: 3,
    missingKey: 'the AMQP messageId property is missing',
    also: {
      fiftyCopies: async ({ key }) => expect(await balanceOf(key)).toBe(String(CENTS)),
      async afterKill({ key }) {
        const redelivery = await takeMessage();
        expect(redelivery.properties.messageId).toBe(key);
        expect(redelivery.fields.redelivered).toBe(true);
        channel.nack(redelivery, false, true);
      },
      killedMidHandler: async ({ key }) => expect(await balanceOf(key)).toBe(String(100 + CENTS)),
      async databaseOutage(messages) {
        for (const { key } of messages) {
          expect([key, await balanceOf(key)]).toEqual([key, String(CENTS)]);
        }
      },
      async poison(_, consumer) {
        expect(lastFixture.attempts.poison).toBe(3);
        expect(consumer.logs().some((line) => line.startsWith('ERROR') && line.includes('dead-letter') && line.includes('failed 3 times'))).toBe(true);
      },
      missingKey: async (_, consumer) => expect(consumer.logs()).toContainEqual(expect.stringMatching(/^ERROR .*dead-letter.*the AMQP messageId property is missing/)),
    },
  };

  describe('the transport contract', () => {
    for (const { name, run } of transportContract(harness)) {
      it(name, run);
    }
  });

  it('a consumer killed after the commit but before the ack: the redelivery is acked as a duplicate, the handler does not run again', async () => {
    const account = 'acc-lost-ack';
    const proxy = new TcpProxy('127.0.0.1', Number(new URL(RABBITMQ_URL).port || 5672));
    await proxy.start();
    const first = await startDemoProcess({ DATABASE_URL: db.url, RABBITMQ_URL: proxy.url(RABBITMQ_URL), RABBITMQ_QUEUE: queue, RABBITMQ_QUEUE_TYPE: queueType });
    children.push(first);
    await publish('credit.grant', { account, cents: 100 }, 'seed-lost-ack');
    await until(async () => (await ledgerRows(account)) === 1, 'the seed credit is processed');

    const holder = await lockAccount(db, account);
    await publish('credit.grant', { account, cents: 9 }, 'msg-lost-ack');
    await until(() => handlerBlocked(db), 'the handler waits on the account lock');
    proxy.holdClientBytes(); // the ack the consumer sends after its commit never reaches the broker
    await holder.query('ROLLBACK');
    await holder.end();
    await until(async () => (await ledgerRows(account)) === 2, 'the handler committed');
    await first.kill('SIGKILL');
    await proxy.close();

    const redelivery = await takeMessage();
    expect(redelivery.properties.messageId).toBe('msg-lost-ack');
    expect(redelivery.fields.redelivered).toBe(true);
    channel.nack(redelivery, false, true);

    await startConsumer();
    await until(() => Promise.resolve(logger.lines.some((line) => line.includes("Duplicate of 'msg-lost-ack'"))), 'the duplicate is acknowledged');
    await stopConsumer();
    expect(await ready()).toBe(0);
    expect(await ledgerRows(account)).toBe(2);
    expect(await db.query('SELECT balance FROM accounts WHERE account = $1', [account])).toEqual([{ balance: '109' }]);
  });

  it('the broker connection drops mid-stream (as in a broker restart): the consumer reconnects, each message has one effect', async () => {
    const proxy = new TcpProxy(new URL(RABBITMQ_URL).hostname, Number(new URL(RABBITMQ_URL).port || 5672));
    await proxy.start();
    await startConsumer(proxy.url(RABBITMQ_URL));
    for (let i = 0; i < 300; i++) {
      channel.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern: 'credit.grant', data: { account: 'acc-drop', cents: 1 } })), {
        messageId: `drop-${i}`,
        persistent: true,
      });
    }
    await channel.waitForConfirms();
    await until(async () => (await ledgerRows('acc-drop')) >= 50, 'the consumer is under way');
    proxy.dropConnections();
    expect(await ledgerRows('acc-drop')).toBeLessThan(300); // the drop really happened mid-stream
    await until(async () => (await ledgerRows('acc-drop')) === 300 && (await ready()) === 0, 'the consumer reconnected and finished', 60_000);
    await stopConsumer();
    await proxy.close();
    expect(await ready()).toBe(0);
    expect(await ledgerRows('acc-drop')).toBe(300);
    expect(await db.query('SELECT balance FROM accounts WHERE account = $1', ['acc-drop'])).toEqual([{ balance: '300' }]);
  });

  it('a handler that throws on the first attempt is requeued and processed once on a later attempt', async () => {
    const fixture = await startConsumer();
    await publish('fixture.flaky', { id: 'flaky-1' }, 'flaky-1');
    await until(async () => (await count(`SELECT count(*) AS n FROM effects WHERE key = 'flaky-1'`)) === 1, 'the retry commits');
    await stopConsumer();
    expect(fixture.attempts.flaky).toBe(2);
    expect(await ready()).toBe(0);
    expect(await ready(deadQueue)).toBe(0);
    expect(logger.lines.some((line) => line.startsWith('WARN') && line.includes('attempt 1 of 5') && line.includes('requeued'))).toBe(true);
  });

  it("a failing message whose consumer restarts before each retry: a quorum queue's x-delivery-count carries the attempts over, a classic queue's consumers each count from 1", async () => {
    // The consumers' verdicts on the message as they log them: one each, as each retry is held for 30 s.
    const verdicts: string[] = [];
    let handlerRuns = 0;
    const verdictOf = (line: string) =>
      /'fixture\.held-poison' failed \((attempt \d of 3)\) and is requeued/.exec(line)?.[1] ??
      /'fixture\.held-poison' was rejected to the dead-letter path: it (failed \d times)/.exec(line)?.[1];
    for (let consumer = 0; consumer < 3; consumer++) {
      const fixture = await startConsumer();
      if (consumer === 0) {
        await publish('fixture.held-poison', { id: 'held-1' }, 'held-1');
      }
      await until(() => Promise.resolve(logger.lines.some((line) => verdictOf(line) !== undefined)), 'the consumer settles its delivery');
      await stopConsumer(); // the retry is held for 30 s: the message returns to the queue unprocessed
      verdicts.push(...logger.lines.map(verdictOf).filter((verdict) => verdict !== undefined));
      handlerRuns += fixture.attempts.heldPoison;
    }
    console.log(`${queueType} queue, a failing message over 3 consumer restarts: ${verdicts.join('; ')}`);
    expect(handlerRuns).toBe(3);
    expect(await count(`SELECT count(*) AS n FROM effects WHERE key = 'held-1'`)).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'held-1'`)).toBe(0);
    if (queueType === 'quorum') {
      expect(verdicts).toEqual(['attempt 1 of 3', 'attempt 2 of 3', 'failed 3 times']);
      await until(async () => (await ready(deadQueue)) === 1, 'the message reaches the dead-letter queue');
      const deadLettered = (await channel.get(deadQueue, { noAck: true })) as amqplib.GetMessage;
      // Rejected by the module, not dropped by the broker's delivery limit ('delivery_limit').
      expect(deadLettered.properties.headers?.['x-first-death-reason']).toBe('rejected');
      expect(await ready()).toBe(0);
    } else {
      expect(verdicts).toEqual(['attempt 1 of 3', 'attempt 1 of 3', 'attempt 1 of 3']);
      await until(async () => (await ready()) === 1, 'the message is back in the queue');
      expect(await ready(deadQueue)).toBe(0);
    }
  });

  it("a failing handler's log lines name the message by its messageId, its consumer, the attempt and what became of it", async () => {
    await startConsumer();
    await publish('fixture.poison', { id: 'named-poison-1' }, 'named-poison-1');
    await until(async () => (await ready(deadQueue)) === 1, 'the message reaches the dead-letter queue');
    await stopConsumer();
    const cause = 'poison: this message can never be processed';
    expect(logger.lines).toContainEqual(`WARN rabbitmq message 'named-poison-1' for 'fixture.poison' failed (attempt 1 of 3) and is requeued in 1000 ms: ${cause}`);
    expect(logger.lines).toContainEqual(`WARN rabbitmq message 'named-poison-1' for 'fixture.poison' failed (attempt 2 of 3) and is requeued in 2000 ms: ${cause}`);
    expect(logger.lines).toContainEqual(
      `ERROR rabbitmq message 'named-poison-1' for 'fixture.poison' was rejected to the dead-letter path: it failed 3 times; last error: ${cause}`,
    );
    // The module's line is the only one: Nest's exception handler does not log the failure again.
    expect(logger.lines.filter((line) => line.includes(cause))).toHaveLength(3);
  });

  it('a connection cut mid-handler is logged as what it is, and the retry processes the message once', async () => {
    const account = 'acc-cut';
    await startConsumer();
    await publish('credit.grant', { account, cents: 100 }, 'cut-seed');
    await until(async () => (await ledgerRows(account)) === 1, 'the seed credit is processed');
    const holder = await lockAccount(db, account);
    await publish('credit.grant', { account, cents: 7 }, 'cut-1');
    await until(() => handlerBlocked(db), 'the handler waits on the account lock inside its claim transaction');
    const [{ terminated }] = await db.query<{ terminated: boolean }>(
      `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    expect(terminated).toBe(true);
    await holder.query('ROLLBACK');
    await holder.end();
    await until(async () => (await ledgerRows(account)) === 2 && (await ready()) === 0, 'the retry commits');
    await stopConsumer();
    const failure = logger.lines.find((line) => line.includes("message 'cut-1'"));
    expect(failure).toMatch(
      /^WARN rabbitmq message 'cut-1' for 'credit\.grant' failed \(attempt 1 of 5\) and is requeued in \d+ ms: The database connection of the claim of 'cut-1' \(credit\.grant\) was lost before the claim committed \(.+\): the claim's transaction was lost with it and nothing was committed/,
    );
    expect(logger.lines.filter((line) => line.includes('Query runner already released'))).toEqual([]);
    expect(await count('SELECT count(*) AS n FROM processed_messages WHERE message_id = $1', ['cut-1'])).toBe(1);
    expect(await db.query('SELECT balance FROM accounts WHERE account = $1', [account])).toEqual([{ balance: '107' }]);
  });

  it("a connection cut while the handler waits between two statements is logged as what it is, not as TypeORM's released query runner", async () => {
    const fixture = await startConsumer();
    let resume!: () => void;
    fixture.pause = new Promise((resolve) => (resume = resolve));
    await publish('fixture.paused', { id: 'paused-1' }, 'paused-1');
    await until(() => Promise.resolve(fixture.attempts.paused === 1), 'the handler waits after its first write');
    const [{ terminated }] = await db.query<{ terminated: boolean }>(
      `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'`,
    );
    expect(terminated).toBe(true);
    resume();
    await until(async () => (await count(`SELECT count(*) AS n FROM effects WHERE key = 'paused-1'`)) === 2 && (await ready()) === 0, 'the retry commits both writes');
    await stopConsumer();
    expect(logger.lines.find((line) => line.includes("message 'paused-1'"))).toMatch(
      /^WARN rabbitmq message 'paused-1' for 'fixture\.paused' failed \(attempt 1 of 5\) and is requeued in \d+ ms: The database connection of the claim of 'paused-1' \(fixture\.paused\) was lost before the claim committed \(.+\): the claim's transaction was lost with it and nothing was committed/,
    );
    // Which form the cut takes is a race (the server's 57P01, or TypeORM's released query runner): either stands only as the
    // cause in the module's own line, never as a line of its own.
    expect(logger.lines.filter((line) => /already released|terminating connection/i.test(line) && !line.includes('was lost before the claim committed'))).toEqual([]);
    expect(fixture.attempts.paused).toBe(2);
    expect(await count('SELECT count(*) AS n FROM processed_messages WHERE message_id = $1', ['paused-1'])).toBe(1);
  });

  it("answers a request-reply caller whose request has no messageId with the module's error code, and dead-letters the request", async () => {
    await startConsumer();
    const { queue: replyTo } = await channel.assertQueue('', { exclusive: true });
    const replies: Record<string, unknown>[] = [];
    await channel.consume(replyTo, (reply) => reply && replies.push(JSON.parse(reply.content.toString()) as Record<string, unknown>), { noAck: true });
    const id = `request-${Date.now()}`;
    channel.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern: 'fixture.credit', data: { account: 'acc-rpc', cents: 5 }, id })), {
      replyTo,
      correlationId: id,
      persistent: true,
    });
    await channel.waitForConfirms();
    await until(async () => replies.length === 1 && (await ready(deadQueue)) === 1, 'the caller is answered and the request dead-lettered');
    expect(replies[0]).toMatchObject({
      isDisposed: true,
      err: { status: 'error', code: 'IDEMPOTENCY_INVALID_KEY', name: 'IdempotencyKeyError', message: expect.stringContaining('the AMQP messageId property is missing') },
    });
    expect(await ledgerRows('acc-rpc')).toBe(0);
  });

  it("answers a request-reply caller at each delivery of its request: the first one's failure at once, then the retry's reply", async () => {
    await startConsumer();
    const { queue: replyTo } = await channel.assertQueue('', { exclusive: true });
    const replies: Record<string, unknown>[] = [];
    await channel.consume(replyTo, (reply) => reply && replies.push(JSON.parse(reply.content.toString()) as Record<string, unknown>), { noAck: true });
    const id = `flaky-request-${Date.now()}`;
    channel.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern: 'fixture.flaky-credit', data: { account: id, cents: 5 }, id })), {
      replyTo,
      correlationId: id,
      messageId: id,
      persistent: true,
    });
    await channel.waitForConfirms();
    await until(async () => replies.length === 2 && (await ready()) === 0, 'both deliveries are answered');
    // Nest's ClientProxy.send() takes the first and completes: its caller sees the failure.
    expect(replies).toEqual([
      { err: { status: 'error', message: 'Internal server error' }, isDisposed: true },
      { response: { balance: 5 }, isDisposed: true },
    ]);
    expect(await ledgerRows(id)).toBe(1);
  });

  it('two handlers of one event pattern each process a message once, and it is acked once', async () => {
    await startConsumer();
    for (let i = 0; i < 5; i++) {
      await publish('fixture.fanout', { id: 'fan-1' }, 'fan-1');
    }
    const duplicatesLogged = () => logger.lines.filter((line) => line.includes("Duplicate of 'fan-1'")).length;
    await until(
      async () => duplicatesLogged() === 8 && (await count(`SELECT count(*) AS n FROM effects WHERE key = 'fan-1'`)) === 2,
      'both handlers commit and answer the four copies as duplicates',
    );
    await stopConsumer();
    expect(await ready()).toBe(0);
    expect(await ready(deadQueue)).toBe(0);
    expect(await db.query(`SELECT handler FROM effects WHERE key = 'fan-1' ORDER BY handler`)).toEqual([
      { handler: 'fanout-first' },
      { handler: 'fanout-second' },
    ]);
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'fan-1'`)).toBe(2);
  });

  it('three consumers, 2,000 messages with 10 % duplicates, one SIGKILLed mid-run → effects equal distinct messages', async () => {
    for (let i = 0; i < 3; i++) {
      children.push(await startDemoProcess({ DATABASE_URL: db.url, RABBITMQ_URL, RABBITMQ_QUEUE: queue, RABBITMQ_QUEUE_TYPE: queueType }));
    }
    const distinct = 1_800;
    const ids = Array.from({ length: distinct }, (_, i) => `load-${i}`);
    for (let i = 0; i < 200; i++) {
      ids.splice(100 + i * 9, 0, `load-${i * 7}`); // a redelivery of an earlier message, interleaved
    }
    expect(ids).toHaveLength(2_000);
    for (const id of ids) {
      const n = Number(id.slice(5));
      channel.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern: 'credit.grant', data: { account: `acc-load-${n % 10}`, cents: n + 1 } })), {
        messageId: id,
        persistent: true,
      });
    }
    await channel.waitForConfirms();
    const loadRows = () => count(`SELECT count(*) AS n FROM ledger_entries WHERE account LIKE 'acc-load-%'`);
    await until(async () => (await loadRows()) >= 400, 'the consumers are under way', 60_000);
    await children[0].kill('SIGKILL');
    await until(async () => (await loadRows()) === distinct && (await ready()) === 0, 'every distinct message is processed', 120_000);
    await Promise.all(children.map((child) => child.kill('SIGTERM')));
    const acknowledgedDuplicates = children.map((child) => child.output().split('Duplicate of').length - 1);
    console.log(
      `2,000 messages (${distinct} distinct) over 3 consumers, one SIGKILLed: ${await loadRows()} effects; ` +
        `duplicates acknowledged per consumer: ${acknowledgedDuplicates.join(', ')} (200 published, the rest redelivered by the kill)`,
    );
    expect(await ready()).toBe(0);
    expect(await ready(deadQueue)).toBe(0);
    expect(await loadRows()).toBe(distinct);
    const expectedTotal = (distinct * (distinct + 1)) / 2;
    expect(await db.query(`SELECT sum(balance)::int AS total FROM accounts WHERE account LIKE 'acc-load-%'`)).toEqual([{ total: expectedTotal }]);
  });
});
