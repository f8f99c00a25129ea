import kafkajs, { type Admin, type Producer } from 'kafkajs';
import { resolve } from 'node:path';
import { KAFKA_TOPICS } from '../apps/kafka/kafka-fixture.module.js';
import { FIXTURE_TABLES_SQL } from '../fixtures/fixture.module.js';
import { type DemoProcess, startAppProcess } from './demo-process.js';
import { type KafkaBroker, kafkaBrokerAvailable, startKafkaBroker } from './kafka-broker.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

const KAFKA_APP = resolve('dist/test-apps/test/apps/kafka/kafka-app.main.js');

/** `describe` where the suites' Kafka broker can be built and started here; `describe.skip` elsewhere. */
export const describeWithBroker = kafkaBrokerAvailable() ? describe : describe.skip;

/** The group of the suites' consumers: Nest's ServerKafka appends `-server` to the groupId it is given. */
const GROUP = 'kafka-e2e';
export const GROUP_ID = `${GROUP}-server`;
/** The topics each test's broker holds, with their partitions; `<topic>.DLT` are the module's dead-letter topics. */
export const TOPICS = {
  [KAFKA_TOPICS.credit]: 4,
  [KAFKA_TOPICS.poison]: 1,
  [KAFKA_TOPICS.position]: 1,
  [KAFKA_TOPICS.quote]: 1,
  [`${KAFKA_TOPICS.quote}.reply`]: 1,
  'credit.DLT': 1,
  'poison.DLT': 1,
};
const CONSUMED = [KAFKA_TOPICS.credit, KAFKA_TOPICS.poison, KAFKA_TOPICS.position, KAFKA_TOPICS.quote];
export const HEADER = 'Idempotency-Key';

/** What the Kafka suites' tests use: one database per suite, a broker per test, consumers as processes of their own. */
export interface KafkaSuite {
  readonly db: TestDatabase;
  /** The address of this test's broker. */
  readonly bootstrap: string;
  /** The suites' app (test/apps/kafka) as a process of its own, in the suites' consumer group; killed after the test. */
  startConsumer(env?: Record<string, string>, databaseUrl?: string): Promise<DemoProcess>;
  /** Publishes `{ id }` to `topic`, with `key` in the Idempotency-Key header when given. */
  publish(topic: string, id: string, key?: string, partition?: number): Promise<unknown>;
  /** The `n` of the row `sql` answers. */
  count(sql: string, params?: unknown[]): Promise<number>;
  /** The effect rows written under `key`. */
  effects(key: string): Promise<number>;
  /** The records of `topic`, summed over its partitions (the high watermarks). */
  records(topic: string): Promise<number>;
  /** The group's positions stored with `kafkaOffsets: true`, as `topic/partition` → next offset. */
  storedPositions(): Promise<Record<string, string>>;
  /** The high watermarks of `topic`'s partitions that hold records, as `topic/partition` → next offset. */
  highWatermarks(topic: string): Promise<Record<string, string>>;
  /** Forgets the positions an earlier test stored (each test has a broker of its own). */
  forgetPositions(): Promise<unknown>;
  /** Whether the group committed, on every partition of the consumed topics, the offset after its last record. */
  drained(): Promise<boolean>;
}

/** Sets up a Kafka suite in the `describe` it is called in: its database for the suite, a broker for each test. */
export function useKafkaSuite(): KafkaSuite {
  let db: TestDatabase;
  let broker: KafkaBroker;
  let admin: Admin;
  let producer: Producer;
  const running: DemoProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.query(FIXTURE_TABLES_SQL);
  });

  // A broker per test: its topics hold that test's records alone, and the group starts from their beginning.
  beforeEach(async () => {
    broker = await startKafkaBroker(TOPICS);
    const kafka = new kafkajs.Kafka({ clientId: 'kafka-e2e-suite', brokers: [broker.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
    admin = kafka.admin();
    producer = kafka.producer();
    await Promise.all([admin.connect(), producer.connect()]);
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((app) => app.kill('SIGKILL')));
    await Promise.all([admin?.disconnect(), producer?.disconnect()]);
    await broker?.stop();
  });

  afterAll(async () => {
    await db?.drop();
  });

  const suite: KafkaSuite = {
    get db() {
      return db;
    },
    get bootstrap() {
      return broker.bootstrap;
    },
    async startConsumer(env = {}, databaseUrl = db.url) {
      const app = await startAppProcess(KAFKA_APP, { DATABASE_URL: databaseUrl, KAFKA_BROKER: broker.bootstrap, GROUP, ...env }, '/ping');
      running.push(app);
      return app;
    },
    publish: (topic, id, key, partition) =>
      producer.send({ topic, messages: [{ value: JSON.stringify({ id }), headers: key === undefined ? {} : { [HEADER]: key }, partition }] }),
    count: async (sql, params = []) => Number((await db.query<{ n: string }>(sql, params))[0].n),
    effects: (key) => suite.count('SELECT count(*) AS n FROM effects WHERE key = $1', [key]),
    records: async (topic) => (await admin.fetchTopicOffsets(topic)).reduce((sum, { high }) => sum + Number(high), 0),
    async storedPositions() {
      const rows = await db.query<{ topic: string; partition: number; offset: string }>(`SELECT topic, "partition", next_offset::text AS offset FROM kafka_offsets WHERE group_id = $1`, [GROUP_ID]);
      return Object.fromEntries(rows.map(({ topic, partition, offset }) => [`${topic}/${partition}`, offset]));
    },
    highWatermarks: async (topic) =>
      Object.fromEntries((await admin.fetchTopicOffsets(topic)).filter(({ high }) => Number(high) > 0).map(({ partition, high }) => [`${topic}/${partition}`, high])),
    forgetPositions: () => db.query(`DO $$ BEGIN IF to_regclass('kafka_offsets') IS NOT NULL THEN DELETE FROM kafka_offsets; END IF; END $$`),
    async drained() {
      const committed = await admin.fetchOffsets({ groupId: GROUP_ID, topics: CONSUMED });
      for (const topic of CONSUMED) {
        const highs = await admin.fetchTopicOffsets(topic);
        const offsets = committed.find((each) => each.topic === topic)!.partitions;
        for (const { partition, high } of highs) {
          const offset = Number(offsets.find((each) => each.partition === partition)?.offset ?? -1);
          if (Number(high) > 0 && offset !== Number(high)) {
            return false;
          }
        }
      }
      return true;
    },
  };
  return suite;
}
