import amqplib from 'amqplib';
import { Queue } from 'bullmq';
import { jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Kafka, logLevel } from 'kafkajs';
import { IDEMPOTENCY_KEY_HEADER } from 'nestjs-idempotent-consumer';
import { createClient } from 'redis';
import { NATS_URL, RABBITMQ_URL, REDIS_URL } from './brokers.js';
import { until } from './test-database.js';

// The bench runner's connections to the brokers: it fills the queues and streams its consumer
// processes drain, looks into them, and deletes the Redis keys of its run.

/** How long the broker keeps a run's queue once unused (no consumer, not redeclared): a run that died leaves nothing behind for long. */
const UNUSED_QUEUE_EXPIRY_MS = 10 * 60_000;

/**
 * A message: its AMQP `messageId`, and the event. With a `pattern`, the body is `{ pattern, data }`
 * as Nest's RMQ transport reads it; without, the body is `data` alone (golevelup's subscribers).
 */
export interface BenchMessage {
  readonly messageId: string;
  readonly pattern?: string;
  readonly data: unknown;
}

/** The runner's connection to RabbitMQ: it fills the queues the bench consumers read, and looks into them. */
export interface BenchBroker {
  readonly url: string;
  /** Declares a queue of this run: not durable, so it holds transient messages in memory. */
  declareQueue(queue: string): Promise<void>;
  /** Publishes `messages` to `queue` as transient messages and waits until the broker has confirmed every one. */
  publish(queue: string, messages: readonly BenchMessage[]): Promise<void>;
  /** The messages ready in `queue` (not counting those delivered and not yet acked). */
  readyMessages(queue: string): Promise<number>;
  deleteQueue(queue: string): Promise<void>;
  close(): Promise<void>;
}

/** Connects to the broker at `url`; rejects when it does not answer. */
export async function openBenchBroker(url = RABBITMQ_URL): Promise<BenchBroker> {
  const connection = await amqplib.connect(url);
  try {
    const channel = await connection.createConfirmChannel();
    return {
      url,
      declareQueue: async (queue) => {
        await channel.assertQueue(queue, { durable: false, arguments: { 'x-expires': UNUSED_QUEUE_EXPIRY_MS } });
      },
      publish: async (queue, messages) => {
        for (const { messageId, pattern, data } of messages) {
          const body = pattern === undefined ? data : { pattern, data };
          channel.sendToQueue(queue, Buffer.from(JSON.stringify(body)), { messageId, persistent: false });
        }
        await channel.waitForConfirms();
      },
      readyMessages: async (queue) => (await channel.checkQueue(queue)).messageCount,
      deleteQueue: async (queue) => {
        await channel.deleteQueue(queue);
      },
      close: () => connection.close(),
    };
  } catch (error) {
    await connection.close();
    throw error;
  }
}

/** Publishes awaiting their acknowledgement at once while a round fills its stream. */
const PUBLISH_WINDOW = 500;

/** The runner's connection to JetStream: it creates the streams the bench consumers read, fills them, and looks into them. */
export interface BenchJetStream {
  readonly url: string;
  /**
   * Creates the stream `name` of `subject` alone, in memory and with work-queue retention, so that
   * a message leaves it once acknowledged; a stream of that name a dead run left is deleted first.
   */
  createStream(name: string, subject: string): Promise<void>;
  /** Publishes `messages` to `subject`, each with its id as `Nats-Msg-Id`, and waits until JetStream has acknowledged every one. */
  publish(subject: string, messages: readonly BenchMessage[]): Promise<void>;
  /** The messages the stream holds: not yet acknowledged by its consumer, delivered or not. */
  messages(stream: string): Promise<number>;
  deleteStream(name: string): Promise<void>;
  close(): Promise<void>;
}

/** Connects to the NATS server at `url`; rejects when it does not answer or has no JetStream. */
export async function openBenchJetStream(url = NATS_URL): Promise<BenchJetStream> {
  const connection = await connect({ servers: url, name: 'idem-bench-runner' });
  try {
    const manager = await jetstreamManager(connection);
    const client = jetstream(connection);
    return {
      url,
      createStream: async (name, subject) => {
        await manager.streams.delete(name).catch(() => undefined);
        await manager.streams.add({ name, subjects: [subject], retention: RetentionPolicy.Workqueue, storage: StorageType.Memory });
      },
      publish: async (subject, messages) => {
        for (let start = 0; start < messages.length; start += PUBLISH_WINDOW) {
          const window = messages.slice(start, start + PUBLISH_WINDOW);
          await Promise.all(window.map(({ messageId, data }) => client.publish(subject, JSON.stringify(data), { msgID: messageId })));
        }
      },
      messages: async (stream) => (await manager.streams.info(stream)).state.messages,
      deleteStream: async (name) => {
        await manager.streams.delete(name);
      },
      close: () => connection.close(),
    };
  } catch (error) {
    await connection.close();
    throw error;
  }
}

/** The prefix of every key this run's bench processes write, so the run can delete them all at its end. */
export const REDIS_RUN_PREFIX = `idempotency-bench-${process.pid}-${Date.now().toString(36)}:`;

/** What the bench processes are given to reach the run's Redis lease store. */
export const REDIS_RUN_ENV = { BENCH_REDIS_URL: REDIS_URL, BENCH_REDIS_PREFIX: REDIS_RUN_PREFIX };

/** Deletes every key this run wrote (the lease claims kept for their retention); returns how many. */
export async function deleteRunKeys(): Promise<number> {
  const client = await createClient({ url: REDIS_URL }).connect();
  try {
    let deleted = 0;
    for await (const keys of client.scanIterator({ MATCH: `${REDIS_RUN_PREFIX}*`, COUNT: 1000 })) {
      if (keys.length > 0) {
        deleted += await client.unlink(keys);
      }
    }
    return deleted;
  } finally {
    await client.close();
  }
}

/** How the run's Redis keeps what it is told: its `appendonly`, `appendfsync` and `save` settings. */
export async function readRedisPersistence(): Promise<Record<string, string>> {
  const client = await createClient({ url: REDIS_URL }).connect();
  try {
    const settings: Record<string, string> = {};
    for (const name of ['appendonly', 'appendfsync', 'save']) {
      Object.assign(settings, await client.configGet(name));
    }
    return settings;
  } finally {
    await client.close();
  }
}

/** A consumer in the runner on `queue`: each message's arrival (epoch ms, sub-ms) by its AMQP messageId. */
export async function consumeArrivals(url: string, queue: string) {
  const connection = await amqplib.connect(url);
  const channel = await connection.createChannel();
  await channel.prefetch(1000);
  const arrivals = new Map<string, number>();
  await channel.consume(
    queue,
    (message) => {
      if (message) {
        arrivals.set(String(message.properties.messageId), performance.timeOrigin + performance.now());
      }
    },
    { noAck: true },
  );
  return {
    arrivals,
    /** Waits until every one of `ids` has arrived, for up to a minute. */
    waitFor: (ids: readonly string[]) => until(async () => ids.every((id) => arrivals.has(id)), `${ids.length} messages reach the consumer of ${queue}`, 60_000),
    close: () => connection.close(),
  };
}

/** Records the runner sends in one produce request while it fills a topic. */
const KAFKA_FILL_CHUNK = 500;

/** Connects to the Kafka broker at `bootstrap` to fill its topics and to read how far a group has committed. */
export async function openBenchKafka(bootstrap: string) {
  const kafka = new Kafka({ clientId: 'idem-bench-runner', brokers: [bootstrap], logLevel: logLevel.ERROR });
  const producer = kafka.producer();
  const admin = kafka.admin();
  const close = async () => {
    await producer.disconnect();
    await admin.disconnect();
  };
  await Promise.all([producer.connect(), admin.connect()]).catch(async (error: unknown) => {
    await close();
    throw error;
  });
  return {
    /** Produces `messages` to `topic`, each with its id as the `Idempotency-Key` header. */
    publish: async (topic: string, messages: readonly BenchMessage[]) => {
      for (let from = 0; from < messages.length; from += KAFKA_FILL_CHUNK) {
        const records = messages.slice(from, from + KAFKA_FILL_CHUNK).map(({ messageId, data }) => ({ value: JSON.stringify(data), headers: { [IDEMPOTENCY_KEY_HEADER]: messageId } }));
        await producer.send({ topic, messages: records });
      }
    },
    /** The records `topic` ever held less those the group `groupId` committed. */
    uncommitted: async (topic: string, groupId: string) => {
      const highs = await admin.fetchTopicOffsets(topic);
      const [{ partitions }] = await admin.fetchOffsets({ groupId, topics: [topic] });
      const sum = (offsets: string[]) => offsets.reduce((total, offset) => total + Math.max(0, Number(offset)), 0);
      return sum(highs.map(({ high }) => high)) - sum(partitions.map(({ offset }) => offset));
    },
    close,
  };
}

/** The runner's BullMQ queues under `prefix` on Redis at `REDIS_URL`: it adds jobs, counts those not done, and removes the queues. */
export function openBenchBullQueues(prefix: string) {
  // BullMQ takes a node-redis client (its own options need ioredis) and leaves it to its owner to close.
  const connection = createClient({ url: REDIS_URL });
  const queues = new Map<string, Queue>();
  const queue = (name: string) => queues.get(name) ?? queues.set(name, new Queue(name, { connection, prefix })).get(name)!;
  return {
    /** Adds a `credit` job per message, its id the message's. */
    add: async (name: string, messages: readonly BenchMessage[]) => {
      await queue(name).addBulk(messages.map(({ messageId, data }) => ({ name: 'credit', data, opts: { jobId: messageId, removeOnComplete: true } })));
    },
    /** The jobs waiting, active, failed or delayed. */
    unsettled: async (name: string) => Object.values(await queue(name).getJobCounts('wait', 'active', 'failed', 'delayed')).reduce((sum, n) => sum + n, 0),
    close: async () => {
      for (const each of queues.values()) {
        await each.obliterate({ force: true });
        await each.close();
      }
      await connection.close();
    },
  };
}
