import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { transportContract, type TransportHarness } from 'nestjs-idempotent-consumer/testing';
import { resolve } from 'node:path';
import { FIXTURE_TABLES_SQL } from './fixtures/fixture.module.js';
import type { SqsFixtureOverrides, SqsFixtureQueues } from './fixtures/sqs-fixture.module.js';
import { startDemoApp } from './support/demo-app.js';
import { type DemoProcess, startAppProcess } from './support/demo-process.js';
import { Fauxqs } from './support/fauxqs.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { createTestDatabase, type TestDatabase, until } from './support/test-database.js';

const SQS_APP = resolve('dist/test-apps/test/apps/sqs/sqs-app.main.js');

/** Against fauxqs, an SQS emulator the suite starts: no Amazon SQS is reachable here. */
describe('exactly-once SQS consumers (@ssut/nestjs-sqs, against the fauxqs emulator)', () => {
  let db: TestDatabase;
  let fauxqs: Fauxqs;
  let queues: SqsFixtureQueues;
  let dead: { credits: string; poison: string; batch: string; backoff: string };
  let consumer: DemoProcess | undefined;
  const children: DemoProcess[] = [];

  /** A consumer: the demo with the fixture's SQS handlers, in a child process (see SqsFixtureHandlers). */
  async function startConsumer(databaseUrl = db.url, overrides: SqsFixtureOverrides = {}): Promise<DemoProcess> {
    const env = { DATABASE_URL: databaseUrl, SQS_ENDPOINT: fauxqs.endpoint, SQS_QUEUES: JSON.stringify(queues), SQS_OVERRIDES: JSON.stringify(overrides) };
    consumer = await startAppProcess(SQS_APP, env, '/accounts/ping');
    children.push(consumer);
    return consumer;
  }

  async function stopConsumer(): Promise<void> {
    await consumer?.kill('SIGTERM');
  }

  const send = (queue: string, body: unknown, fifo?: { group: string; deduplicationId: string }) =>
    fauxqs.client.send(
      new SendMessageCommand({ QueueUrl: queue, MessageBody: JSON.stringify(body), MessageGroupId: fifo?.group, MessageDeduplicationId: fifo?.deduplicationId }),
    );
  const count = async (sql: string, params: unknown[] = []) => Number((await db.query<{ n: string }>(sql, params))[0].n);
  const ledgerRows = (account: string) => count('SELECT count(*) AS n FROM ledger_entries WHERE account = $1', [account]);
  const effects = (handler: string, key: string) => count('SELECT count(*) AS n FROM effects WHERE handler = $1 AND key = $2', [handler, key]);
  const balance = async (account: string) => (await db.query<{ balance: string }>('SELECT balance FROM accounts WHERE account = $1', [account]))[0]?.balance;
  const logged = (text: string) => (consumer?.output() ?? '').split(text).length - 1;
  const runs = (key: string) => logged(`run ${key}`);

  beforeAll(async () => {
    db = await createTestDatabase();
    fauxqs = await Fauxqs.start();
    const suffix = `${process.pid}-${Date.now()}`;
    const credits = await fauxqs.createQueue(`credits-${suffix}`, 2, 10);
    const poison = await fauxqs.createQueue(`poison-${suffix}`, 1, 3);
    const batch = await fauxqs.createQueue(`batch-${suffix}`, 1, 10);
    const fifo = await fauxqs.createQueue(`fifo-${suffix}.fifo`, 1);
    const backoff = await fauxqs.createQueue(`backoff-${suffix}`, 1, 4);
    queues = { credits: credits.url, poison: poison.url, batch: batch.url, fifo: fifo.url, backoff: backoff.url };
    dead = { credits: credits.deadUrl!, poison: poison.deadUrl!, batch: batch.deadUrl!, backoff: backoff.deadUrl! };
    const { app: migrator } = await startDemoApp('express', db.url);
    await migrator.close();
    await db.query(FIXTURE_TABLES_SQL);
  });

  afterEach(async () => {
    await Promise.all(children.splice(0).map((child) => child.kill('SIGKILL')));
  });

  afterAll(async () => {
    await fauxqs?.stop();
    await db?.drop();
  });

  /** The credits a harness message grants to its account, named by its key. */
  const CENTS = 7;
  /** Each contract message's queue, its dead-letter queue's depth before it was sent, and the SQS MessageIds it was sent as. */
  const sent = new Map<string, { readonly dead: string; readonly deadBefore: number; readonly messageIds: string[] }>();
  async function sendOf(key: string, queue: 'credits' | 'poison', body: unknown): Promise<void> {
    const entry = sent.get(key) ?? { dead: dead[queue], deadBefore: await fauxqs.depth(dead[queue]), messageIds: [] };
    sent.set(key, entry);
    const { MessageId } = await send(queues[queue], body);
    entry.messageIds.push(MessageId!);
  }
  /** A consumer process as the contract uses it (`logged` and `runs` read the last one's output). */
  const started = (app: DemoProcess) => ({ logs: () => app.output().split('\n'), stop: () => app.kill('SIGTERM'), kill: () => app.kill('SIGKILL') });

  /**
   * The fixture's `credits` handler keyed by the payload's id (visibility timeout 2 s, dead-lettered
   * after 10 receives) and its `poison` handler (visibility timeout 1 s, dead-lettered after 3
   * receives), each consumer a process of its own; sqs-consumer deletes what committed.
   */
  const harness: TransportHarness = {
    start: async ({ databaseUrl } = {}) => started(await startConsumer(databaseUrl)),
    publish: ({ key }) => sendOf(key, 'credits', { id: key, account: key, cents: CENTS }),
    publishCopies: async ({ key }, copies) => {
      await sendOf(key, 'credits', { id: key, account: key, cents: CENTS }); // the first alone: it notes the dead-letter queue's depth before
      await Promise.all(Array.from({ length: copies - 1 }, () => sendOf(key, 'credits', { id: key, account: key, cents: CENTS })));
    },
    publishPoison: ({ key }) => sendOf(key, 'poison', { id: key }),
    publishWithoutKey: ({ key }) => sendOf(key, 'poison', { note: key }),
    effects: async ({ key }) => (await ledgerRows(key)) + (await count('SELECT count(*) AS n FROM effects WHERE key = $1', [key])),
    async block({ key }) {
      await db.query('INSERT INTO accounts (account, balance) VALUES ($1, 100)', [key]);
      const holder = await db.connect();
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM accounts WHERE account = $1 FOR UPDATE', [key]);
      return async () => {
        await holder.query('ROLLBACK');
        await holder.end();
      };
    },
    drained: async () => (await fauxqs.depth(queues.credits)) === 0 && (await fauxqs.depth(queues.poison)) === 0,
    deadLettered: async ({ key }) => {
      const { dead: deadQueue, deadBefore } = sent.get(key)!;
      return (await fauxqs.depth(deadQueue)) - deadBefore;
    },
    query: (sql, params) => db.query(sql, params),
    get databaseUrl() {
      return db.url;
    },
    poisonAttempts: 3,
    missingKey: "'id' in the message payload is missing",
    also: {
      fiftyCopies: async ({ key }) => expect(await balance(key)).toBe(String(CENTS)),
      afterKill: async () => expect(await fauxqs.depth(queues.credits)).toBe(1), // received, not deleted
      killedMidHandler: async ({ key }) => expect(await balance(key)).toBe(String(100 + CENTS)),
      async databaseOutage(messages) {
        console.log(`SQS, 2 s database outage: ${logged('failed and is left on the queue')} failed receives, each shown again after the visibility timeout; nothing dead-lettered`);
        for (const { key } of messages) {
          expect([key, await balance(key)]).toEqual([key, String(CENTS)]);
        }
      },
      async poison({ key }) {
        expect(runs(key)).toBe(3);
        expect(logged('run ')).toBe(3);
        expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE consumer LIKE 'sqs poison'`)).toBe(0);
        expect(consumer!.output()).toContain(`sqs message '${sent.get(key)!.messageIds[0]}' (key '${key}') for 'sqs poison' failed and is left on the queue`);
      },
      async missingKey() {
        expect(logged('run ')).toBe(0);
        expect(consumer!.output()).toMatch(/ERROR.*can never succeed.*'id' in the message payload is missing/);
      },
    },
  };

  describe('the transport contract', () => {
    for (const { name, run } of transportContract(harness)) {
      it(name, run);
    }
  });

  it('a batch handler: each message is its own claim, and only those that committed are deleted', async () => {
    await startConsumer();
    const ids = ['b1', 'b2', 'b3', 'b4', 'b5'];
    await fauxqs.client.send(
      new SendMessageBatchCommand({
        QueueUrl: queues.batch,
        Entries: ids.map((id) => ({ Id: id, MessageBody: JSON.stringify({ id, failFirst: id === 'b3' }) })),
      }),
    );
    await until(async () => (await count(`SELECT count(*) AS n FROM effects WHERE handler = 'batch'`)) === 5 && (await fauxqs.depth(queues.batch)) === 0, 'every message commits');
    await stopConsumer();
    for (const id of ids) {
      expect([id, await effects('batch', id)]).toEqual([id, 1]);
    }
    expect(ids.map(runs)).toEqual([1, 1, 2, 1, 1]);
    // A committed message left on the queue would come back as a duplicate: none did.
    expect(logged('Duplicate of')).toBe(0);
    expect(await fauxqs.depth(dead.batch)).toBe(0);
  });

  it("a FIFO queue's messages are keyed by their deduplication id", async () => {
    await startConsumer();
    await send(queues.fifo, { id: 'fifo-1' }, { group: 'g', deduplicationId: 'dedup-fifo-1' });
    await until(async () => (await effects('fifo', 'fifo-1')) === 1 && (await fauxqs.depth(queues.fifo)) === 0, 'the message commits');
    await stopConsumer();
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id = 'dedup-fifo-1'`)).toBe(1);
  });

  it("a failing message is shown again after retryDelay doubled with each receive (1 s, 2 s, 4 s), not after each visibility timeout (1 s), then dead-lettered", async () => {
    await startConsumer();
    await send(queues.backoff, { id: 'backoff-1' });
    const receivedAt: number[] = [];
    for (let receive = 1; receive <= 4; receive++) {
      await until(() => Promise.resolve(runs('backoff-1') >= receive), `receive ${receive} runs the handler`, 30_000);
      receivedAt.push(performance.now());
    }
    await until(async () => (await fauxqs.depth(dead.backoff)) === 1, 'the message reaches the dead-letter queue after 4 receives', 30_000);
    await stopConsumer();
    const gaps = receivedAt.slice(1).map((at, i) => (at - receivedAt[i]) / 1_000);
    console.log(`SQS retry delay: receives ${gaps.map((gap) => gap.toFixed(2)).join(' s, ')} s apart (queue visibility timeout 1 s, retryDelay 1 s)`);
    expect(gaps[0]).toBeGreaterThanOrEqual(0.9);
    expect(gaps[1]).toBeGreaterThanOrEqual(1.8);
    expect(gaps[2]).toBeGreaterThanOrEqual(3.6);
    expect(gaps[2]).toBeLessThan(6);
    expect(runs('backoff-1')).toBe(4);
    expect(await fauxqs.depth(queues.backoff)).toBe(0);
  });

  it('a 5-second database outage on a queue that dead-letters after 4 receives with a 1 s visibility timeout: the growing delay outlasts it, nothing dead-lettered', async () => {
    const proxy = TcpProxy.toDatabase(db.url);
    await proxy.start();
    await fauxqs.purge(dead.backoff);
    try {
      await startConsumer(proxy.url(db.url));
      const account = 'acc-backoff-outage';
      proxy.refuse();
      const outage = performance.now();
      await send(queues.backoff, { id: 'outage-backoff', account, cents: 3 });
      await until(() => Promise.resolve(performance.now() - outage >= 5_000), 'the outage has lasted 5 s', 10_000);
      proxy.accept();
      await until(async () => (await ledgerRows(account)) === 1 || (await fauxqs.depth(dead.backoff)) > 0, 'the message is processed or dead-lettered', 30_000);
      await until(async () => (await fauxqs.depth(queues.backoff)) === 0, 'the message is deleted');
      await stopConsumer();
      expect(await fauxqs.depth(dead.backoff)).toBe(0);
      expect(await ledgerRows(account)).toBe(1);
      expect(await balance(account)).toBe('3');
    } finally {
      await proxy.close();
    }
  });

  it('warns once the consumers run: of a queue without a redrive policy, and of a consumer without ApproximateReceiveCount, naming each', async () => {
    await startConsumer(db.url, { credits: { messageSystemAttributeNames: [] } });
    await until(() => Promise.resolve(logged('has no redrive policy') > 0), 'the queues’ attributes are read');
    await stopConsumer();
    const output = consumer!.output();
    expect(output).toMatch(/WARN.*The queue of the SQS consumer 'fifo' \(delivering to SqsFixtureHandlers\.fifo, which is idempotent\) has no redrive policy: .*Give the queue a RedrivePolicy/);
    expect(logged('has no redrive policy')).toBe(1);
    expect(output).toMatch(/WARN.*The SQS consumer 'credits' \(delivering to SqsFixtureHandlers\.credit, which is idempotent\) does not receive ApproximateReceiveCount: .*messageSystemAttributeNames: \['ApproximateReceiveCount'\]/);
    expect(logged('does not receive ApproximateReceiveCount')).toBe(1);
  });

  describe('refuses consumers that would lose or repeat messages', () => {
    it.each([
      ['shouldDeleteMessages: false', { credits: { shouldDeleteMessages: false } }, /'credits' delivers to SqsFixtureHandlers\.credit.*shouldDeleteMessages: false/],
      ['alwaysAcknowledge on a batch handler', { batch: { alwaysAcknowledge: true } }, /'batch' delivers to SqsFixtureHandlers\.batch.*alwaysAcknowledge: true/],
      ['a FIFO consumer without the deduplication id', { fifo: { messageSystemAttributeNames: [] } }, /'fifo' .*MessageDeduplicationId/],
    ])('%s', async (_, overrides: SqsFixtureOverrides, message) => {
      const refused = await startConsumer(db.url, overrides).catch((caught: unknown) => caught);
      expect(refused).toBeInstanceOf(Error);
      expect((refused as Error).message).toMatch(/exited with 1/);
      expect((refused as Error).message).toMatch(new RegExp(`IdempotencyOptionsError.*${message.source}`));
    });
  });
});
