import { ClientKafka } from '@nestjs/microservices';
import kafkajs from 'kafkajs';
import { transportContract, type TransportHarness } from 'nestjs-idempotent-consumer/testing';
import { lastValueFrom } from 'rxjs';
import { KAFKA_TOPICS } from './apps/kafka/kafka-fixture.module.js';
import { describeWithBroker, HEADER, TOPICS, useKafkaSuite } from './support/kafka-suite.js';
import { until } from './support/test-database.js';

/**
 * Exactly-once Kafka consumers: the transport contract, a kill between the claim's commit and the
 * offset's, request-reply, and the autoCommit refusal (where a group reads from, rebalances and kafkaOffsets:
 * test/kafka-positions.e2e-spec.ts).
 */
describeWithBroker('exactly-once Kafka consumers (Nest ServerKafka, kafkajs, against librdkafka’s mock cluster)', () => {
  const kafka = useKafkaSuite();
  const { startConsumer, publish, effects, records, drained, count } = kafka;

  /**
   * Credits keyed by the Idempotency-Key header (the `credit` topic, 4 partitions) and the `poison`
   * handler (maxAttempts 3), each consumer a process of its own in one group. Each test has a
   * broker of its own, so a dead-letter topic's records are those of the check's one message.
   */
  const harness: TransportHarness = {
    async start({ databaseUrl } = {}) {
      const app = await startConsumer({}, databaseUrl);
      return { logs: () => app.output().split('\n'), stop: () => app.kill('SIGTERM'), kill: () => app.kill('SIGKILL') };
    },
    publish: ({ key }) => publish(KAFKA_TOPICS.credit, key, key).then(() => undefined),
    // Kafka drops no repeated record: a producer that retries writes copies, here across the topic's partitions.
    publishCopies: async ({ key }, copies) => {
      await Promise.all(Array.from({ length: copies }, (_, i) => publish(KAFKA_TOPICS.credit, key, key, i % TOPICS.credit)));
    },
    publishPoison: ({ key }) => publish(KAFKA_TOPICS.poison, key, key).then(() => undefined),
    publishWithoutKey: ({ key }) => publish(KAFKA_TOPICS.credit, key).then(() => undefined),
    effects: ({ key }) => effects(key),
    async block() {
      const holder = await kafka.db.connect();
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE effects IN SHARE MODE');
      return async () => {
        await holder.query('ROLLBACK');
        await holder.end();
      };
    },
    drained,
    deadLettered: async () => (await records('credit.DLT')) + (await records('poison.DLT')),
    query: (sql, params) => kafka.db.query(sql, params),
    get databaseUrl() {
      return kafka.db.url;
    },
    poisonAttempts: 3,
    missingKey: `the ${HEADER} header is missing`,
    also: {
      databaseOutage: async (_, consumer) => expect(consumer.logs().some((line) => line.includes('its partition is paused and reads it again'))).toBe(true),
      async poison({ key }, consumer) {
        expect(consumer.logs().filter((line) => line.includes(`run ${key} at offset 0`))).toHaveLength(3);
        expect(await records('poison.DLT')).toBe(1);
        expect(consumer.logs().filter((line) => line.includes('RpcExceptionsHandler') || line.includes('Error when calling eachMessage'))).toEqual([]);
      },
      missingKey: async () => expect(await records('credit.DLT')).toBe(1),
    },
  };

  describe('the transport contract', () => {
    for (const { name, run } of transportContract(harness)) {
      it(name, run, 180_000);
    }
  });

  it.each([
    ['the Idempotency-Key header', KAFKA_TOPICS.credit, 'after-commit'],
    ['the record’s topic/partition/offset', KAFKA_TOPICS.position, 'position/0/0'],
  ])(
    'a consumer killed (SIGKILL) after the claim committed, before the offset commit → the next consumer reads the record again and answers it as a duplicate (key: %s)',
    async (_, topic, claimed) => {
      const id = `after-commit-${topic}`;
      const killed = await startConsumer({ KILL_BEFORE_OFFSET_COMMIT: 'true' });
      await publish(topic, id, topic === KAFKA_TOPICS.credit ? claimed : undefined);
      await until(() => Promise.resolve(killed.child.exitCode !== null || killed.child.signalCode !== null), 'the consumer dies at its offset commit', 30_000);
      expect(killed.child.signalCode).toBe('SIGKILL');
      expect(await effects(id)).toBe(1);
      expect(await drained()).toBe(false);
      const next = await startConsumer();
      await until(drained, 'the next consumer commits the offset', 60_000);
      await next.kill('SIGTERM');
      expect(await effects(id)).toBe(1);
      expect(await count('SELECT count(*) AS n FROM processed_messages WHERE message_id = $1', [claimed])).toBe(1);
      expect(next.output()).toContain(`Duplicate of '${claimed}'`);
    },
    120_000,
  );

  it('a @MessagePattern request sent twice under one key: one effect, the second reply is the first one (not a new quote), the offset committed', async () => {
    const consumer = await startConsumer();
    const client = new ClientKafka({
      client: { clientId: 'kafka-e2e-requester', brokers: [kafka.bootstrap], logLevel: kafkajs.logLevel.NOTHING },
      consumer: { groupId: 'kafka-e2e-requester', sessionTimeout: 6_000, heartbeatInterval: 500 },
    });
    client.subscribeToResponseOf(KAFKA_TOPICS.quote);
    await client.connect();
    try {
      const request = () => lastValueFrom(client.send<{ id: string; quote: string }>(KAFKA_TOPICS.quote, { value: { id: 'quote-1' }, headers: { [HEADER]: 'quote-1' } }));
      const first = await request();
      const second = await request();
      expect(first).toEqual({ id: 'quote-1', quote: expect.stringMatching(/^[0-9a-f-]{36}$/) });
      expect(second).toEqual(first);
      expect(await effects('quote-1')).toBe(1);
      expect(consumer.output()).toContain("Duplicate of 'quote-1'");
      await until(drained, "the request's offset is committed");
    } finally {
      await client.close();
    }
  });

  it("refuses to start with kafkajs's autoCommit left on, naming the group and the handler", async () => {
    const start = startConsumer({ AUTO_COMMIT: 'default' });
    await expect(start).rejects.toThrow(/IdempotencyOptionsError: The Kafka consumer group 'kafka-e2e-server' would lose messages \(autoCommit left to kafkajs's default, true\): KafkaFixtureController\.\w+ is idempotent/);
  });
});

