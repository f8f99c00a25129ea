import { ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect as connectNats, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import amqplib from 'amqplib';
import { Queue } from 'bullmq';
import { Kafka, logLevel } from 'kafkajs';
import { BullMqPublisher, IdempotencyPublishRefusedError, JetStreamPublisher, KafkaPublisher, RabbitMqPublisher, SqsPublisher } from 'nestjs-idempotent-consumer';
import { createClient } from 'redis';
import { NATS_URL, natsAvailable, RABBITMQ_URL, rabbitMqAvailable, REDIS_URL, redisAvailable } from './support/brokers.js';
import { freePort } from './support/demo-process.js';
import { Fauxqs, sqsClient } from './support/fauxqs.js';
import { type KafkaBroker, kafkaBrokerAvailable, startKafkaBroker } from './support/kafka-broker.js';
import { firstAttempt, type HeldMessage, publisherContract, type PublisherHarness } from './support/outbox-publisher.contract.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { until } from './support/test-database.js';

/** This run's names: queues, subjects, streams and Redis prefixes no other run shares. */
const RUN = `${process.pid}-${Date.now()}`;
let addresses = 0;
const nextName = (prefix: string) => `${prefix}-${RUN}-${++addresses}`;

const withRabbitMq = (await rabbitMqAvailable()) ? describe : describe.skip;
const withNats = (await natsAvailable()) ? describe : describe.skip;
const withRedis = (await redisAvailable()) ? describe : describe.skip;
const withKafka = kafkaBrokerAvailable() ? describe : describe.skip;

const parse = (text: string): unknown => JSON.parse(text);

withRabbitMq('RabbitMqPublisher against RabbitMQ (confirm channel, mandatory, messageId)', () => {
  let inspector: amqplib.ChannelModel;
  let channel: amqplib.Channel;
  const publisher = new RabbitMqPublisher({ urls: [RABBITMQ_URL] });

  beforeAll(async () => {
    inspector = await amqplib.connect(RABBITMQ_URL);
    channel = await inspector.createChannel();
  });

  afterAll(async () => {
    await publisher.close();
    await inspector?.close(); // its queues are exclusive: they go with it
  });

  const harness: PublisherHarness = {
    publisher: () => publisher,
    address: async () => (await channel.assertQueue(nextName('outbox-publisher'), { exclusive: true })).queue,
    async held(queue) {
      const held: HeldMessage[] = [];
      for (let message = await channel.get(queue, { noAck: true }); message !== false; message = await channel.get(queue, { noAck: true })) {
        const body = parse(message.content.toString()) as { pattern?: string; data?: unknown };
        held.push({
          key: message.properties.messageId as string | undefined,
          payload: body.pattern === undefined ? body : body.data,
          headers: (message.properties.headers ?? {}) as Record<string, string>,
          pattern: body.pattern,
        });
      }
      return held;
    },
    carries: { pattern: true, headers: true },
    repeatedId: 'kept',
    unacceptable: async () => ({ address: nextName('no-such-queue') }),
    unreachable: async () => ({
      publisher: new RabbitMqPublisher({ urls: [`amqp://guest:guest@127.0.0.1:${await freePort()}`] }),
      address: 'anything',
      outcome: 'never resolves',
    }),
  };

  for (const check of publisherContract(harness)) {
    it(check.name, check.run);
  }
});

withNats('JetStreamPublisher against NATS JetStream (Nats-Msg-Id)', () => {
  const STREAM = `OUTBOX_PUBLISHERS_${RUN.replace('-', '_')}`;
  const SUBJECTS = `outbox-publishers-${RUN}`;
  let nats: NatsConnection;
  let jsm: JetStreamManager;
  let publisher: JetStreamPublisher;
  const closing: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    nats = await connectNats({ servers: NATS_URL });
    jsm = await jetstreamManager(nats);
    await jsm.streams.add({ name: STREAM, subjects: [`${SUBJECTS}.>`] });
    publisher = new JetStreamPublisher({ jetstream: jetstream(nats), headers: natsHeaders });
  });

  afterAll(async () => {
    await Promise.all(closing.map((close) => close()));
    await jsm?.streams.delete(STREAM).catch(() => undefined);
    await nats?.close();
  });

  const harness: PublisherHarness = {
    publisher: () => publisher,
    address: async () => `${SUBJECTS}.${++addresses}`,
    async held(subject) {
      const held: HeldMessage[] = [];
      const { state } = await jsm.streams.info(STREAM);
      for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
        const stored = await jsm.streams.getMessage(STREAM, { seq });
        if (stored?.subject === subject) {
          const headers = Object.fromEntries((stored.header?.keys() ?? []).map((name) => [name, stored.header.get(name)]));
          held.push({ key: headers['Nats-Msg-Id'], payload: stored.json(), headers, pattern: undefined });
        }
      }
      return held;
    },
    carries: { pattern: false, headers: true },
    repeatedId: 'dropped',
    // No stream listens on the subject: JetStream answers no one ("no responders").
    unacceptable: async () => ({ address: nextName('outbox-no-stream') }),
    async unreachable() {
      // Connected through a proxy, which then takes the server away: the client is left reconnecting.
      const proxy = new TcpProxy('127.0.0.1', Number(new URL(`nats://${NATS_URL}`).port || 4222));
      await proxy.start();
      const connection = await connectNats({ servers: `127.0.0.1:${proxy.port}`, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
      closing.push(async () => {
        await connection.close();
        await proxy.close();
      });
      proxy.refuse();
      return { publisher: new JetStreamPublisher({ jetstream: jetstream(connection, { timeout: 2_000 }) }), address: `${SUBJECTS}.${++addresses}`, outcome: 'rejects' };
    },
  };

  for (const check of publisherContract(harness)) {
    it(check.name, check.run);
  }

  it('names a subject that no stream takes, which the client reports as "jetstream is not enabled"', async () => {
    const subject = nextName('outbox-no-stream');
    await expect(publisher.publish({ id: nextName('id'), address: subject, pattern: undefined, headers: {}, payload: '{}', orderingKey: undefined })).rejects.toThrow(
      `no JetStream stream takes the subject '${subject}'`,
    );
  });
});

withRedis('BullMqPublisher against BullMQ on Redis (jobId)', () => {
  /** BullMQ takes node-redis clients (its own options need ioredis) and leaves them open for their owner to close. */
  const connection = createClient({ url: REDIS_URL });
  const unreachableClients: { destroy(): void }[] = [];
  const prefix = `outbox-publishers-${RUN}`;
  const publisher = new BullMqPublisher({ connection, prefix });
  const inspected = new Map<string, Queue>();
  const inspect = (name: string) => inspected.get(name) ?? inspected.set(name, new Queue(name, { connection, prefix })).get(name)!;

  afterAll(async () => {
    await publisher.close();
    for (const queue of inspected.values()) {
      await queue.obliterate({ force: true });
      await queue.close();
    }
    await connection.close();
    unreachableClients.forEach((client) => client.destroy());
  });

  const harness: PublisherHarness = {
    publisher: () => publisher,
    address: async () => nextName('outbox-publisher'),
    async held(name) {
      const jobs = await inspect(name).getJobs(['wait', 'delayed', 'prioritized', 'active', 'completed', 'failed']);
      return jobs.map((job) => ({ key: job.id, payload: job.data, headers: {}, pattern: job.name }));
    },
    carries: { pattern: true, headers: false },
    repeatedId: 'dropped',
    // Any queue name is a queue: what BullMQ refuses is a job id that is an integer (refuse() answers it before it is written).
    unacceptable: async () => ({ id: '4242' }),
    async unreachable() {
      const client = createClient({ url: `redis://127.0.0.1:${await freePort()}` });
      client.on('error', () => undefined);
      unreachableClients.push(client);
      return { publisher: new BullMqPublisher({ connection: client, prefix }), address: nextName('outbox-publisher'), outcome: 'never resolves' };
    },
  };

  for (const check of publisherContract(harness)) {
    it(check.name, check.run);
  }

  it("names a message's job 'outbox' when it has no pattern, and refuses what BullMQ cannot take", async () => {
    const address = await harness.address();
    await publisher.publish({ id: `outbox-${RUN}`, address, pattern: undefined, headers: {}, payload: '{"n":1}', orderingKey: undefined });
    expect(await harness.held(address)).toEqual([{ key: `outbox-${RUN}`, payload: { n: 1 }, headers: {}, pattern: 'outbox' }]);
    const message = { id: 'a', address, pattern: undefined, headers: {}, payload: '{}', orderingKey: undefined };
    expect(publisher.refuse(message)).toBeUndefined();
    expect(publisher.refuse({ ...message, id: '42' })).toContain('integer');
    expect(publisher.refuse({ ...message, id: 'a:b' })).toContain("':'");
    expect(publisher.refuse({ ...message, headers: { a: 'b' } })).toContain('no headers');
  });
});

/** Against fauxqs, the SQS emulator the suite starts (as test/sqs.e2e-spec.ts does): no Amazon SQS is reachable here. */
describe('SqsPublisher against SQS (the fauxqs emulator)', () => {
  let fauxqs: Fauxqs;
  let publisher: SqsPublisher;
  const unreachableClients: SQSClient[] = [];

  beforeAll(async () => {
    fauxqs = await Fauxqs.start();
    publisher = new SqsPublisher({ client: fauxqs.client });
  });

  afterAll(async () => {
    unreachableClients.forEach((client) => client.destroy());
    await fauxqs?.stop();
  });

  /** Every message in the queue, received once, read as this module's consumer of `keyedBy` reads its key. */
  async function received(url: string, keyedBy: 'MessageDeduplicationId' | 'Idempotency-Key'): Promise<HeldMessage[]> {
    const held: HeldMessage[] = [];
    for (;;) {
      const { Messages = [] } = await fauxqs.client.send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 60, MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'] }),
      );
      if (Messages.length === 0) {
        return held;
      }
      for (const message of Messages) {
        const headers = Object.fromEntries(Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [name, value.StringValue!]));
        // As SqsTransport reads it: MessageDeduplicationId, else the MessageId; or the header a handler keys by.
        const key = keyedBy === 'Idempotency-Key' ? headers['Idempotency-Key'] : (message.Attributes?.MessageDeduplicationId ?? message.MessageId);
        held.push({ key, payload: parse(message.Body!), headers, pattern: undefined });
      }
    }
  }

  const harness = (fifo: boolean): PublisherHarness => ({
    publisher: () => publisher,
    address: async () => (await fauxqs.createQueue(`${nextName('outbox-publisher')}${fifo ? '.fifo' : ''}`, 60)).url,
    held: (url) => received(url, fifo ? 'MessageDeduplicationId' : 'Idempotency-Key'),
    carries: { pattern: false, headers: true },
    repeatedId: fifo ? 'dropped' : 'kept',
    // A queue that does not exist: SQS answers QueueDoesNotExist.
    unacceptable: async () => ({ address: `${fauxqs.endpoint}/000000000000/${nextName('no-such-queue')}${fifo ? '.fifo' : ''}` }),
    async unreachable() {
      const endpoint = `http://127.0.0.1:${await freePort()}`;
      const client = sqsClient(endpoint);
      unreachableClients.push(client);
      return { publisher: new SqsPublisher({ client }), address: `${endpoint}/000000000000/${nextName('outbox-publisher')}${fifo ? '.fifo' : ''}`, outcome: 'rejects' };
    },
  });

  describe('a FIFO queue: the id is the MessageDeduplicationId, the key the consumer reads by default', () => {
    for (const check of publisherContract(harness(true))) {
      it(check.name, check.run);
    }
  });

  describe("a standard queue: the id is the 'Idempotency-Key' attribute, the key of a handler keyed by that header", () => {
    for (const check of publisherContract(harness(false))) {
      it(check.name, check.run);
    }
  });

  it("on FIFO queues the group is the ordering key, else the id; refuses a pattern, ids SQS's FIFO queues cannot take and attributes SQS refuses", async () => {
    const url = (await fauxqs.createQueue(`${nextName('outbox-publisher')}.fifo`, 60)).url;
    const message = { id: `outbox-${RUN}`, address: url, pattern: undefined, headers: {}, payload: '{"n":1}', orderingKey: undefined };
    await publisher.publish(message, firstAttempt());
    await publisher.publish({ ...message, id: `outbox-${RUN}-ordered`, orderingKey: 'account-7' }, firstAttempt());
    const { Messages = [] } = await fauxqs.client.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'] }));
    expect(Object.fromEntries(Messages.map((held) => [held.Attributes?.MessageDeduplicationId, held.Attributes?.MessageGroupId]))).toEqual({
      [`outbox-${RUN}`]: `outbox-${RUN}`,
      [`outbox-${RUN}-ordered`]: 'account-7',
    });
    expect(publisher.refuse(message)).toBeUndefined();
    expect(publisher.refuse({ ...message, pattern: 'orders.created' })).toContain('no pattern');
    expect(publisher.refuse({ ...message, address: 'orders' })).toContain("queue's URL");
    expect(publisher.refuse({ ...message, id: 'x'.repeat(129) })).toContain('128');
    expect(publisher.refuse({ ...message, id: 'x'.repeat(129), address: url.replace(/\.fifo$/, '') })).toBeUndefined();
    expect(publisher.refuse({ ...message, orderingKey: 'with space' })).toContain('MessageGroupId');
    expect(publisher.refuse({ ...message, headers: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`h${i}`, 'v'])) })).toContain('at most 9 headers');
    expect(publisher.refuse({ ...message, headers: { 'AWS.trace': 'v' } })).toContain('name');
    expect(publisher.refuse({ ...message, headers: { trace: '' } })).toContain('value');
    expect(publisher.refuse({ ...message, headers: { 'Idempotency-Key': 'k' } })).toContain('carries the id');
  });
});

/** Against librdkafka's mock cluster (test/support/kafka-broker.ts), which auto-creates a topic at its first message and refuses nothing. */
withKafka('KafkaPublisher against a Kafka-protocol broker (the Idempotency-Key header, the ordering key as the record key)', () => {
  let broker: KafkaBroker;
  let kafka: Kafka;
  let publisher: KafkaPublisher;

  beforeAll(async () => {
    broker = await startKafkaBroker();
    kafka = new Kafka({ clientId: `outbox-publishers-${RUN}`, brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    publisher = new KafkaPublisher({ producer: kafka.producer() });
  });

  afterAll(async () => {
    await publisher?.close();
    await broker?.stop();
  });

  /** Every record of `topic`, read from the beginning by a consumer group of its own, with its partition and key. */
  async function records(topic: string): Promise<(HeldMessage & { partition: number; recordKey: string | undefined })[]> {
    const admin = kafka.admin();
    await admin.connect();
    const total = (await admin.fetchTopicOffsets(topic)).reduce((sum, { high, low }) => sum + Number(high) - Number(low), 0);
    await admin.disconnect();
    const held: (HeldMessage & { partition: number; recordKey: string | undefined })[] = [];
    const consumer = kafka.consumer({ groupId: nextName('outbox-publishers'), maxWaitTimeInMs: 100 });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ partition, message }) => {
          const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([name, value]) => [name, String(value)]));
          held.push({ key: headers['Idempotency-Key'], payload: parse(message.value!.toString()), headers, pattern: undefined, partition, recordKey: message.key?.toString() });
        },
      });
      await until(async () => held.length >= total, `the ${total} records of ${topic} are read`, 30_000);
    } finally {
      await consumer.disconnect();
    }
    return held;
  }

  const harness: PublisherHarness = {
    publisher: () => publisher,
    address: async () => nextName('outbox-publisher'),
    held: (topic) => records(topic),
    carries: { pattern: false, headers: true },
    repeatedId: 'kept',
    // The mock takes any topic: a name Kafka does not allow (a real broker answers INVALID_TOPIC_EXCEPTION) is refused by the publisher.
    unacceptable: async () => ({ address: 'no such topic!' }),
    async unreachable() {
      // Two retries of the connection, a second in all, then kafkajs rejects (no timer of it outlives the check).
      const nowhere = new Kafka({ brokers: [`127.0.0.1:${await freePort()}`], logLevel: logLevel.NOTHING, retry: { retries: 2 } });
      return { publisher: new KafkaPublisher({ producer: nowhere.producer() }), address: nextName('outbox-publisher'), outcome: 'rejects' };
    },
  };

  for (const check of publisherContract(harness)) {
    it(check.name, check.run);
  }

  it('puts the messages of an ordering key in one partition, in the order sent; refuses a pattern, topic names Kafka does not allow and a header named as the id', async () => {
    const topic = await harness.address();
    const message = { id: '', address: topic, pattern: undefined, headers: {}, payload: '{}', orderingKey: undefined };
    for (let n = 0; n < 12; n++) {
      await publisher.publish({ ...message, id: `${topic}-${n}`, payload: JSON.stringify({ n }), orderingKey: `account-${n % 3}` }, firstAttempt());
    }
    const held = await records(topic);
    expect(held).toHaveLength(12);
    for (let account = 0; account < 3; account++) {
      const ofKey = held.filter((record) => record.recordKey === `account-${account}`);
      expect(ofKey.map((record) => record.payload)).toEqual([0, 1, 2, 3].map((i) => ({ n: i * 3 + account })));
      expect(new Set(ofKey.map((record) => record.partition)).size).toBe(1);
    }
    expect(publisher.refuse(message)).toBeUndefined();
    expect(publisher.refuse({ ...message, pattern: 'orders.created' })).toContain('no pattern');
    expect(publisher.refuse({ ...message, address: '..' })).toContain("topic's name");
    expect(publisher.refuse({ ...message, address: 'x'.repeat(250) })).toContain("topic's name");
    expect(publisher.refuse({ ...message, headers: { 'Idempotency-Key': 'k' } })).toContain('carries');
    await expect(publisher.publish({ ...message, id: 'refused', address: 'no such topic!' }, firstAttempt())).rejects.toBeInstanceOf(IdempotencyPublishRefusedError);
  });
});
