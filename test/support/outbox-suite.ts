import { connect as connectNats, type NatsConnection } from '@nats-io/transport-node';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import amqplib from 'amqplib';
import { type Admin, Kafka, logLevel } from 'kafkajs';
import { resolve } from 'node:path';
import { NATS_URL, RABBITMQ_URL } from './brokers.js';
import { type DemoProcess, startAppProcess } from './demo-process.js';
import { type KafkaBroker, startKafkaBroker } from './kafka-broker.js';
import { TcpProxy } from './tcp-proxy.js';
import { until } from './test-database.js';
import { createOutboxTestDatabase, type OutboxDatabase, type OutboxTestDatabase } from './outbox-databases.js';

const APPS = {
  producer: resolve('dist/test-apps/test/apps/outbox/producer.main.js'),
  relay: resolve('dist/test-apps/test/apps/outbox/relay.main.js'),
  rabbitmq: resolve('dist/test-apps/test/apps/outbox/rabbitmq-consumer.main.js'),
  jetstream: resolve('dist/test-apps/test/apps/outbox/jetstream-consumer.main.js'),
  kafka: resolve('dist/test-apps/test/apps/outbox/kafka-consumer.main.js'),
};

export type Transport = 'rabbitmq' | 'jetstream' | 'kafka';

/** This run's names: queues, subjects, the stream and the durables carry it, so runs side by side never meet. */
const RUN = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
const STREAM = `IDEM_OUTBOX_E2E_${RUN.replace('-', '_')}`;
const SUBJECT_TOKEN = `idem-outbox-e2e-${RUN}`;

/** What one of the suite's processes counted (GET /stats). */
interface Stats {
  deliveries: { processed: number; duplicate: number; failed: number }[];
  outbox: { destinations: { published: number; failed: number }[]; deadLettered: number };
}

async function stats(app: DemoProcess): Promise<Stats> {
  return (await fetch(`${app.baseUrl}/stats`)).json() as Promise<Stats>;
}
const duplicatesSeen = (figures: Stats) => figures.deliveries.reduce((sum, counts) => sum + counts.duplicate, 0);
const published = (figures: Stats) => figures.outbox.destinations.reduce((sum, counts) => sum + counts.published, 0);
const failedPublishes = (figures: Stats) => figures.outbox.destinations.reduce((sum, counts) => sum + counts.failed, 0);

/** Runs `work` over `items`, `concurrency` at a time. */
async function inPool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        await work(items[next++]);
      }
    }),
  );
}

/**
 * The transactional outbox end to end, on each broker: a producer service (HTTP, idempotent) that
 * writes a credit and announces it through the outbox, relays (in the producer's process or
 * processes of their own) and a downstream service whose idempotent handler grants each credit,
 * all real processes that the tests kill. Every check counts rows in the database: the producer's
 * credits, the outbox's messages, and the downstream `granted_credits`, a table without a unique
 * constraint, where a credit granted twice would show as two rows.
 *
 * One suite file per broker on PostgreSQL (test/outbox.<broker>.e2e-spec.ts), and RabbitMQ's on
 * MariaDB (test/outbox.mariadb.e2e-spec.ts), so that jest's workers share them; each runs the
 * same tests, `a.` to `g.`, when its broker is `available`.
 */
export function describeOutbox(transport: Transport, available: boolean, database: OutboxDatabase = 'postgres'): void {
  /** The figures each test reports, printed once the suite ends. */
  const report: string[] = [];

  (available ? describe : describe.skip)(`the transactional outbox to ${transport}${database === 'postgres' ? '' : ` on ${database}`}`, () => {
    let amqp: amqplib.ChannelModel | undefined;
    let nats: NatsConnection | undefined;
    let jsm: JetStreamManager | undefined;
    let kafkaBroker: KafkaBroker | undefined;
    let kafkaAdmin: Admin | undefined;
    const queues: string[] = [];
    const running: DemoProcess[] = [];
    const proxies: TcpProxy[] = [];
    let db: OutboxTestDatabase | undefined;

    beforeAll(async () => {
      if (transport === 'rabbitmq') {
        amqp = await amqplib.connect(RABBITMQ_URL);
      } else if (transport === 'kafka') {
        // One broker for the suite; each test's topic is auto-created (four partitions) at its first use.
        kafkaBroker = await startKafkaBroker();
        kafkaAdmin = new Kafka({ brokers: [kafkaBroker.bootstrap], logLevel: logLevel.NOTHING }).admin();
        await kafkaAdmin.connect();
      } else {
        nats = await connectNats({ servers: NATS_URL });
        jsm = await jetstreamManager(nats);
        await jsm.streams.add({ name: STREAM, subjects: [`${SUBJECT_TOKEN}.>`] });
      }
    });

    afterEach(async () => {
      await Promise.all(running.splice(0).map((app) => app.kill('SIGKILL')));
      await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
      await db?.drop();
      db = undefined;
    });

    afterAll(async () => {
      if (amqp) {
        const channel = await amqp.createChannel();
        for (const queue of queues) {
          await channel.deleteQueue(queue);
        }
        await amqp.close();
      }
      await jsm?.streams.delete(STREAM).catch(() => undefined);
      await nats?.close();
      await kafkaAdmin?.disconnect();
      await kafkaBroker?.stop();
      if (report.length > 0) {
        console.log(`outbox e2e figures:\n${report.join('\n')}`);
      }
    });

    /** One test's world: a database of its own with the apps' tables, and a queue or subject (and durable) of its own. */
    interface World {
      readonly tag: string;
      readonly db: OutboxTestDatabase;
      readonly address: string;
      readonly env: Record<string, string>;
    }

    async function world(tag: string): Promise<World> {
      db = await createOutboxTestDatabase(database);
      const address = transport === 'jetstream' ? `${SUBJECT_TOKEN}.${tag}` : `outbox-e2e-${RUN}-${tag}`;
      if (transport === 'rabbitmq') {
        queues.push(address);
        // Declared as the consumer declares it, so that the relay routes to it while the consumer still boots.
        const channel = await amqp!.createChannel();
        await channel.assertQueue(address, { durable: true });
        await channel.close();
      }
      return {
        tag,
        db,
        address,
        env: {
          DATABASE_URL: db.url,
          DATABASE: database,
          TRANSPORT: transport,
          OUTBOX_ADDRESS: address,
          RABBITMQ_URL,
          NATS_URL,
          KAFKA_BROKERS: kafkaBroker?.bootstrap ?? '',
          DURABLE: `outbox-${RUN}-${tag}`,
        },
      };
    }

    async function start(entry: string, env: Record<string, string>): Promise<DemoProcess> {
      const app = await startAppProcess(entry, env, '/ping');
      running.push(app);
      return app;
    }

    /** The producer: it runs the migrations, so it starts first; RELAY=none leaves sending to relay processes. */
    const startProducer = (w: World, env: Record<string, string> = {}) => start(APPS.producer, { ...w.env, POOL_SIZE: '20', ...env });
    const startRelay = (w: World, env: Record<string, string> = {}) => start(APPS.relay, { ...w.env, ...env });
    const startConsumer = (w: World, env: Record<string, string> = {}) => start(APPS[transport], { ...w.env, ...env });

    /**
     * A proxy in front of the broker, and the environment that sends a relay through it. A Kafka
     * client connects to the brokers the cluster's metadata names, not to the one it was given:
     * KAFKA_PROXY_PORT sends all its connections to the proxy (the cluster has one broker).
     */
    async function brokerProxy(): Promise<{ proxy: TcpProxy; env: Record<string, string> }> {
      const target = { rabbitmq: new URL(RABBITMQ_URL), jetstream: new URL(`nats://${NATS_URL}`), kafka: new URL(`kafka://${kafkaBroker?.bootstrap}`) }[transport];
      const proxy = new TcpProxy(target.hostname, Number(target.port || (transport === 'rabbitmq' ? 5672 : 4222)));
      await proxy.start();
      proxies.push(proxy);
      const env = { rabbitmq: { RABBITMQ_URL: proxy.url(RABBITMQ_URL) }, jetstream: { NATS_URL: `127.0.0.1:${proxy.port}` }, kafka: { KAFKA_PROXY_PORT: String(proxy.port) } };
      return { proxy, env: env[transport] };
    }

    /**
     * POSTs a credit under `key`, as a client does: a 409 (its twin still in flight) is sent again
     * until answered otherwise. Answers every status it got and the last body.
     */
    async function credit(producer: DemoProcess, key: string, body: object): Promise<{ statuses: number[]; body: Record<string, string> }> {
      const statuses: number[] = [];
      const deadline = Date.now() + 30_000;
      for (;;) {
        const response = await fetch(`${producer.baseUrl}/credits`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify(body),
        });
        const text = await response.text();
        statuses.push(response.status);
        if (response.status !== 409 || Date.now() > deadline) {
          return { statuses, body: text ? (JSON.parse(text) as Record<string, string>) : {} };
        }
        await new Promise((done) => setTimeout(done, 25));
      }
    }

    /** `count` credits with keys `<tag>-<i>`, `concurrency` at a time, each expected to answer 201 once. */
    async function credits(producer: DemoProcess, w: World, count: number, concurrency = 16, from = 0): Promise<void> {
      const keys = Array.from({ length: count }, (_, index) => `${w.tag}-${from + index}`);
      const failures: string[] = [];
      await inPool(keys, concurrency, async (key) => {
        const { statuses } = await credit(producer, key, { account: `acc-${key}`, cents: 100 });
        if (statuses.at(-1) !== 201) {
          failures.push(`${key}: ${statuses.join(',')}`);
        }
      });
      expect(failures).toEqual([]);
    }

    async function counts(w: World) {
      const [row] = await w.db.query(`
        SELECT (SELECT count(*) FROM credits) AS credits,
               (SELECT count(*) FROM outbox_messages) AS outbox,
               (SELECT count(*) FROM outbox_messages WHERE dispatched_at IS NOT NULL) AS dispatched,
               (SELECT count(*) FROM outbox_messages WHERE dead_lettered_at IS NOT NULL) AS dead,
               (SELECT count(*) FROM granted_credits) AS granted,
               (SELECT count(DISTINCT credit_id) FROM granted_credits) AS granted_credits,
               (SELECT count(*) FROM credits c LEFT JOIN (SELECT credit_id, count(*) AS n FROM granted_credits GROUP BY credit_id) g ON g.credit_id = c.id
                 WHERE coalesce(g.n, 0) <> 1) AS not_once,
               (SELECT count(*) FROM granted_credits g WHERE NOT EXISTS (SELECT 1 FROM credits c WHERE c.id = g.credit_id)) AS strays,
               (SELECT count(*) FROM granted_credits g WHERE NOT EXISTS (SELECT 1 FROM outbox_messages o WHERE o.id = g.message_id)) AS unknown_ids`);
      return row;
    }

    /**
     * What the waits read while the relays and the consumer work: three counts off the tables
     * (`counts` also joins the tables: read every 20 ms over 1,000 rows, that kept a core of the server busy).
     */
    async function progress(w: World): Promise<{ outbox: number; dispatched: number; granted: number }> {
      const [row] = await w.db.query(`
        SELECT (SELECT count(*) FROM outbox_messages) AS outbox,
               (SELECT count(*) FROM outbox_messages WHERE dispatched_at IS NOT NULL) AS dispatched,
               (SELECT count(*) FROM granted_credits) AS granted`);
      return { outbox: row.outbox, dispatched: row.dispatched, granted: row.granted };
    }

    /** The downstream consumer has nothing waiting: the queue's ready messages, the durable's pending and unacknowledged ones, or the group's uncommitted offsets. */
    async function consumerDrained(w: World): Promise<boolean> {
      if (transport === 'kafka') {
        // Nest's Kafka server names its group `<groupId>-server`.
        const [{ partitions: committed }] = await kafkaAdmin!.fetchOffsets({ groupId: `${w.env.DURABLE}-server`, topics: [w.address] });
        const highs = await kafkaAdmin!.fetchTopicOffsets(w.address);
        return highs.every(({ partition, high }) => high === '0' || committed.find((offset) => offset.partition === partition)?.offset === high);
      }
      if (transport === 'rabbitmq') {
        const channel = await amqp!.createChannel();
        try {
          return (await channel.checkQueue(w.address)).messageCount === 0;
        } finally {
          await channel.close();
        }
      }
      const info = await jsm!.consumers.info(STREAM, `${w.env.DURABLE}-${w.address.replaceAll('.', '_')}`);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    }

    /**
     * Waits until the relays dispatched every message and `expected` credits were granted with the
     * consumer drained, then checks each credit was written, announced and granted exactly once.
     */
    async function expectExactlyOnce(w: World, expected: number, timeoutMs = 60_000): Promise<Record<string, number>> {
      let last: Record<string, number> = {};
      await until(
        async () => {
          last = await progress(w);
          return last.dispatched === last.outbox && last.granted >= expected && (await consumerDrained(w));
        },
        `every message is dispatched and ${expected} credits are granted (last: ${JSON.stringify(last)})`,
        timeoutMs,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; last counts ${JSON.stringify(last)}`);
      });
      const final = await counts(w);
      expect(final).toEqual({
        credits: expected,
        outbox: expected,
        dispatched: expected,
        dead: 0,
        granted: expected,
        granted_credits: expected,
        not_once: 0,
        strays: 0,
        unknown_ids: 0,
      });
      return final;
    }

    /** Lag from the credit's write (in the producer's transaction) to its grant (in the consumer's), in ms. */
    async function lag(w: World): Promise<string> {
      const rows = await w.db.rows<{ written: Date; granted: Date }>('SELECT c.created_at AS written, g.granted_at AS granted FROM granted_credits g JOIN credits c ON c.id = g.credit_id');
      const lags = rows.map((row) => row.granted.getTime() - row.written.getTime()).sort((a, b) => a - b);
      const at = (share: number) => lags[Math.min(lags.length - 1, Math.floor(share * lags.length))];
      return `lag write->grant p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${lags.at(-1)} ms`;
    }

    /** Messages per second the relays dispatched, from the first dispatch (or `since`) to the last. */
    async function dispatchRate(w: World, since?: Date): Promise<string> {
      const [row] = await w.db.rows<{ n: number | string; first: Date; last: Date }>(
        'SELECT count(*) AS n, min(dispatched_at) AS first, max(dispatched_at) AS last FROM outbox_messages WHERE dispatched_at IS NOT NULL',
      );
      const seconds = (row.last.getTime() - (since ?? row.first).getTime()) / 1000;
      return `${row.n} dispatched in ${seconds.toFixed(2)} s = ${Math.round(Number(row.n) / Math.max(seconds, 0.001))} msg/s`;
    }

    const note = (line: string) => report.push(`[${transport}] ${line}`);

    it('a. 1,000 credits with 10 % of them resent (half concurrently): 1,000 credits, 1,000 messages, 1,000 grants, each credit once', async () => {
      const w = await world('a');
      const producer = await startProducer(w);
      const consumer = await startConsumer(w);
      const started = Date.now();
      const statuses: number[] = [];
      const creditIds = new Map<string, Set<string>>();
      const keep = (key: string, result: { statuses: number[]; body: Record<string, string> }) => {
        statuses.push(...result.statuses);
        creditIds.set(key, (creditIds.get(key) ?? new Set()).add(result.body.creditId));
      };
      await inPool(
        Array.from({ length: 1000 }, (_, index) => index),
        16,
        async (index) => {
          const key = `a-${index}`;
          const body = { account: `acc-${index % 50}`, cents: 100 + index };
          if (index % 20 === 0) {
            // Resent while the first is in flight: one wins the claim, the other is answered 409, then the replay.
            const [first, second] = await Promise.all([credit(producer, key, body), credit(producer, key, body)]);
            keep(key, first);
            keep(key, second);
          } else if (index % 20 === 10) {
            // Resent after the answer (its response was lost, say): replayed.
            keep(key, await credit(producer, key, body));
            keep(key, await credit(producer, key, body));
          } else {
            keep(key, await credit(producer, key, body));
          }
        },
      );
      const answered = Date.now();
      expect(statuses.filter((status) => status !== 201 && status !== 409)).toEqual([]);
      expect(creditIds.size).toBe(1000);
      expect([...creditIds.values()].filter((ids) => ids.size !== 1 || ids.has(undefined as unknown as string))).toEqual([]);
      await expectExactlyOnce(w, 1000);
      const drained = Date.now();
      const seen = await stats(consumer);
      note(
        `a: 1,100 requests (${statuses.filter((status) => status === 409).length} answered 409 then retried) in ${answered - started} ms; credits 1000, outbox 1000 dispatched, ` +
          `granted 1000 (each once); consumer duplicates ${duplicatesSeen(seen)}; all granted ${drained - started} ms after the first request; ` +
          `${await dispatchRate(w)}; ${await lag(w)}`,
      );
    });

    it('b. rolled-back requests (the handler throws after publishing) answer 500 and announce nothing, ever', async () => {
      const w = await world('b');
      const producer = await startProducer(w);
      const consumerStarts = startConsumer(w);
      const failed: number[] = [];
      await inPool(
        Array.from({ length: 100 }, (_, index) => index),
        8,
        async (index) => {
          const fail = index % 2 === 1;
          const key = `b-${index}`;
          const { statuses } = await credit(producer, key, { account: fail ? `fail-${index}` : `ok-${index}`, cents: 100, fail });
          if (fail) {
            failed.push(statuses.at(-1)!);
            // The client retries: nothing was kept of the failed attempt, so it runs (and fails) again.
            failed.push((await credit(producer, key, { account: `fail-${index}`, cents: 100, fail })).statuses.at(-1)!);
          } else {
            expect(statuses.at(-1)).toBe(201);
          }
        },
      );
      expect(failed).toEqual(Array.from({ length: 100 }, () => 500));
      await consumerStarts;
      // Written after every failure was answered: once it is granted, the relay has sent all that committed before it.
      expect((await credit(producer, 'b-last', { account: 'ok-last', cents: 1 })).statuses).toEqual([201]);
      await expectExactlyOnce(w, 51);
      const [leaks] = await w.db.query(`
        SELECT (SELECT count(*) FROM credits WHERE account LIKE 'fail-%') AS credits,
               (SELECT count(*) FROM outbox_messages WHERE payload LIKE '%"account":"fail-%') AS outbox,
               (SELECT count(*) FROM granted_credits WHERE account LIKE 'fail-%') AS granted,
               (SELECT count(*) FROM processed_messages WHERE message_id LIKE 'b-%') AS claims`);
      expect(leaks).toEqual({ credits: 0, outbox: 0, granted: 0, claims: 51 });
      note('b: 100 failed attempts (50 keys, each retried) all 500; 51 good ones: credits 51, outbox 51, granted 51; failed: credits 0, outbox 0, granted 0');
    });

    it('c. the producer SIGKILLed after its commits, before anything was sent: a relay started later sends all of them, each granted once', async () => {
      const w = await world('c');
      const producer = await startProducer(w, { RELAY: 'none' });
      const consumerStarts = startConsumer(w);
      await credits(producer, w, 200);
      await consumerStarts;
      await producer.kill('SIGKILL');
      const [row] = await w.db.query(`SELECT count(*) AS total, count(dispatched_at) AS dispatched FROM outbox_messages`);
      expect(row).toEqual({ total: 200, dispatched: 0 });
      expect((await counts(w)).granted).toBe(0);
      const relayStarted = new Date();
      const relay = await startRelay(w);
      await expectExactlyOnce(w, 200);
      note(
        `c: 200 requests 201, producer SIGKILLed, 200 undispatched rows; relay started: 200 dispatched, granted 200 (each once); relay published ${published(await stats(relay))}; ` +
          `${await dispatchRate(w)} (${await dispatchRate(w, relayStarted)} counted from the relay's start, boot included)`,
      );
    });

    it('d. a relay SIGKILLed mid-batch (the broker got the messages, its confirmations held back): another relay sends them again, each granted once', async () => {
      const w = await world('d');
      const { proxy, env } = await brokerProxy();
      const producer = await startProducer(w, { RELAY: 'none' });
      const [consumer, relay] = await Promise.all([startConsumer(w), startRelay(w, { ...env, RELAY_PUBLISH_TIMEOUT: '60s', RELAY_PUBLISH_TIMEOUT_MS: '60000' })]);
      // One message through, so the relay's connection to the broker is up before the confirmations are held.
      await credits(producer, w, 1, 1, 1000);
      await until(async () => (await progress(w)).dispatched === 1, 'the first message is dispatched');
      // The relay, idle, is stopped while a backlog commits, so that its next batch takes the backlog at once.
      relay.child.kill('SIGSTOP');
      await credits(producer, w, 100);
      proxy.holdServerBytes();
      relay.child.kill('SIGCONT');
      let held = 0;
      let reached = 0;
      await until(
        async () => {
          const open = await w.db.idleBatches();
          const locked = await w.db.lockedPending();
          held = locked.length;
          reached = held === 0 ? 0 : (await w.db.query(`SELECT count(*) AS n FROM granted_credits WHERE message_id IN (${locked.map((id) => `'${id}'`).join(', ')})`))[0].n;
          return open === 1 && held > 0 && reached === held;
        },
        "the relay's batch transaction holds its rows while the consumer already granted them",
        30_000,
      );
      await relay.kill('SIGKILL');
      const second = await startRelay(w);
      await expectExactlyOnce(w, 101);
      const seen = await stats(consumer);
      note(
        `d: relay SIGKILLed holding a batch of ${held} locked rows (idle in transaction), all ${reached} already granted downstream; second relay published ${published(await stats(second))}; ` +
          `credits 101, outbox 101 dispatched, granted 101 (each once); consumer duplicates ${duplicatesSeen(seen)}`,
      );
      if (transport !== 'jetstream') {
        // The broker took each held message again (JetStream drops a repeated Nats-Msg-Id): the consumer saw each as a duplicate and granted nothing twice.
        expect(duplicatesSeen(seen)).toBeGreaterThanOrEqual(held);
      }
    });

    it('e. the broker restarted while credits stream in (connections cut, refused, accepted again): nothing lost, each granted once', async () => {
      const w = await world('e');
      const { proxy, env } = await brokerProxy();
      const producer = await startProducer(w, { RELAY: 'none' });
      const [consumer, relay] = await Promise.all([
        startConsumer(w),
        startRelay(w, { ...env, RELAY_PUBLISH_TIMEOUT: '2s', RELAY_PUBLISH_TIMEOUT_MS: '2000', RELAY_RETRY_DELAY: '250ms', RELAY_POLL_INTERVAL: '250ms' }),
      ]);
      const streaming = credits(producer, w, 300, 4);
      await until(async () => (await progress(w)).dispatched >= 50, '50 messages are dispatched', 30_000);
      const before = relay.output().length;
      proxy.refuse();
      const refusedAt = Date.now();
      await until(
        async () => {
          if (!relay.output().slice(before).includes('failed publish')) {
            return false;
          }
          const { outbox, dispatched } = await progress(w);
          return outbox - dispatched >= 20;
        },
        'the relay fails publishes while credits keep committing',
        30_000,
      );
      proxy.accept();
      const outageMs = Date.now() - refusedAt;
      await streaming;
      await expectExactlyOnce(w, 300);
      const relayed = await stats(relay);
      note(
        `e: 300 requests; broker refused for ${outageMs} ms mid-stream; relay published ${published(relayed)} with ${failedPublishes(relayed)} failed publishes (retried); ` +
          `credits 300, outbox 300 dispatched, granted 300 (each once); consumer duplicates ${duplicatesSeen(await stats(consumer))}`,
      );
    });

    it('f. two relays competing for a backlog of 1,000: they split it, each message sent once, each granted once', async () => {
      const w = await world('f');
      const producer = await startProducer(w, { RELAY: 'none' });
      const consumerStarts = startConsumer(w);
      await credits(producer, w, 1000);
      const consumer = await consumerStarts;
      // Both relays wait on the table until both are up, so neither takes the backlog alone.
      const release = await w.db.holdOutbox();
      const relays = await Promise.all([startRelay(w, { RELAY_BATCH_SIZE: '50' }), startRelay(w, { RELAY_BATCH_SIZE: '50' })]);
      await until(async () => (await w.db.relaysWaiting()) === 2, 'both relays wait for the backlog');
      const released = Date.now();
      await release();
      await until(async () => (await progress(w)).dispatched === 1000, 'the backlog is dispatched', 60_000);
      const dispatchedMs = Date.now() - released;
      await expectExactlyOnce(w, 1000);
      const split = await Promise.all(relays.map(async (relay) => published(await stats(relay))));
      expect(split.reduce((sum, count) => sum + count, 0)).toBe(1000);
      expect(split.every((count) => count > 0)).toBe(true);
      note(
        `f: backlog 1000; relays published ${split.join(' + ')} = 1000 in ${dispatchedMs} ms (${Math.round(1000 / (dispatchedMs / 1000))} msg/s for two relays, batches of 50); ` +
          `granted 1000 (each once); consumer duplicates ${duplicatesSeen(await stats(consumer))}`,
      );
    });

    it('g. the consumer SIGKILLed mid-handler with messages in flight, then restarted: each credit granted once', async () => {
      const w = await world('g');
      const producer = await startProducer(w);
      const slow = await startConsumer(w, { HANDLER_DELAY_MS: '1000', ACK_WAIT_MS: '3000' });
      // Watched while the credits stream in, not after: a fast machine grants them all in the meantime.
      const sending = credits(producer, w, 60, 8);
      await until(
        async () =>
          (await progress(w)).granted >= 3 && (await w.db.sleepingHandlers()) > 0,
        'some credits are granted and handlers sleep in their transactions',
        30_000,
      );
      const before = await counts(w);
      await slow.kill('SIGKILL');
      await sending;
      const restarted = await startConsumer(w, { ACK_WAIT_MS: '3000' });
      await expectExactlyOnce(w, 60);
      note(
        `g: 60 credits; consumer SIGKILLed with ${before.granted} granted and handlers mid-transaction; restarted consumer: granted 60 (each once); ` +
          `its duplicates ${duplicatesSeen(await stats(restarted))}`,
      );
    });
  });
}
