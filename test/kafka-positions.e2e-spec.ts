import type { DemoProcess } from './support/demo-process.js';
import { KAFKA_TOPICS } from './apps/kafka/kafka-fixture.module.js';
import { describeWithBroker, TOPICS, useKafkaSuite } from './support/kafka-suite.js';
import { createTestDatabase, until } from './support/test-database.js';

/** Triggers that write down the transaction of each write of an effect and of a position. */
const WRITING_TRANSACTIONS_SQL = `
  CREATE TABLE kafka_e2e_writers (tbl text NOT NULL, txid bigint NOT NULL);
  CREATE FUNCTION kafka_e2e_writer() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO kafka_e2e_writers VALUES (TG_TABLE_NAME, txid_current()); RETURN NULL; END $$;
  CREATE TRIGGER kafka_e2e_writer AFTER INSERT OR UPDATE ON effects FOR EACH ROW EXECUTE FUNCTION kafka_e2e_writer();
  CREATE TRIGGER kafka_e2e_writer AFTER INSERT OR UPDATE ON kafka_offsets FOR EACH ROW EXECUTE FUNCTION kafka_e2e_writer();`;
const FORGET_WRITING_TRANSACTIONS_SQL = `
  DROP TRIGGER kafka_e2e_writer ON effects;
  DROP TRIGGER kafka_e2e_writer ON kafka_offsets;
  DROP FUNCTION kafka_e2e_writer();
  DROP TABLE kafka_e2e_writers;`;

/** Where a Kafka consumer group reads from: its positions kept with the claim (kafkaOffsets), and rebalances mid-stream. */
describeWithBroker('Kafka consumer groups’ positions (Nest ServerKafka, kafkajs, against librdkafka’s mock cluster)', () => {
  const kafka = useKafkaSuite();
  const { startConsumer, publish, effects, records, drained, count, storedPositions, highWatermarks, forgetPositions } = kafka;

  it('with kafkaOffsets: a consumer killed (SIGKILL) after the claim committed, before the offset commit → the next consumer, which reads the record again before its read of the stored positions ends, settles it without its handler, and the stored position is Kafka’s next offset', async () => {
    await forgetPositions();
    const killed = await startConsumer({ KAFKA_OFFSETS: 'true', KILL_BEFORE_OFFSET_COMMIT: 'true' });
    // Which transaction wrote the effect and which the position: the claim's, both.
    await kafka.db.query(WRITING_TRANSACTIONS_SQL);
    try {
      await publish(KAFKA_TOPICS.credit, 'seek-past-1', 'seek-past-1', 0);
      await until(() => Promise.resolve(killed.child.exitCode !== null || killed.child.signalCode !== null), 'the consumer dies at its offset commit', 30_000);
      const writers = await kafka.db.query<{ tbl: string; txid: string }>('SELECT tbl, txid::text FROM kafka_e2e_writers ORDER BY tbl');
      expect(writers.map(({ tbl }) => tbl)).toEqual(['effects', 'kafka_offsets']);
      expect(writers[0].txid).toBe(writers[1].txid);
    } finally {
      await kafka.db.query(FORGET_WRITING_TRANSACTIONS_SQL);
    }
    expect(killed.child.signalCode).toBe('SIGKILL');
    expect(await effects('seek-past-1')).toBe(1);
    expect(await storedPositions()).toEqual({ 'credit/0': '1' });
    expect(await drained()).toBe(false);
    // The next consumer's read of the stored positions waits for this lock, so it reads the record
    // again from Kafka's committed offset before it can seek past it: the worst order of the two.
    const positionsLock = await kafka.db.connect();
    await positionsLock.query('BEGIN');
    await positionsLock.query('LOCK TABLE kafka_offsets IN ACCESS EXCLUSIVE MODE');
    let next: DemoProcess;
    try {
      next = await startConsumer({ KAFKA_OFFSETS: 'true' });
      await until(() => Promise.resolve(next.output().includes('received credit/0/0')), 'the next consumer reads the record again', 60_000);
    } finally {
      await positionsLock.query('ROLLBACK');
      await positionsLock.end();
    }
    // A second record of the partition: once it is committed, the first would have been read before it.
    await publish(KAFKA_TOPICS.credit, 'seek-past-2', 'seek-past-2', 0);
    await until(drained, 'the next consumer commits the second record', 60_000);
    await next.kill('SIGTERM');
    const entered = (app: DemoProcess, id: string) => app.output().split('\n').filter((line) => line.includes(`credit ${id} entered`)).length;
    expect([entered(killed, 'seek-past-1'), entered(next, 'seek-past-1'), entered(next, 'seek-past-2')]).toEqual([1, 0, 1]);
    expect(next.output()).not.toContain('Duplicate of');
    expect([await effects('seek-past-1'), await effects('seek-past-2')]).toEqual([1, 1]);
    expect(await storedPositions()).toEqual(await highWatermarks(KAFKA_TOPICS.credit));
    expect(await storedPositions()).toEqual({ 'credit/0': '2' });
  }, 120_000);

  it('refuses to start with kafkaOffsets and without the table of the positions, naming the migration', async () => {
    const bare = await createTestDatabase();
    try {
      await expect(startConsumer({ KAFKA_OFFSETS: 'without-table' }, bare.url)).rejects.toThrow(
        /IdempotencySchemaError: kafkaOffsets is on, and the table kafka_offsets of the Kafka consumers' positions is missing\. Add CreateKafkaOffsetsTable1796515200000/,
      );
    } finally {
      await bare.drop();
    }
  });

  it.each([
    ['Kafka’s committed offsets', 'kafka', {}],
    ['kafkaOffsets', 'offsets', { KAFKA_OFFSETS: 'true' }],
  ])('two consumers of one group, one joining and one leaving mid-stream (two rebalances), positions from %s → each of 60 records over 4 partitions has one effect, and the group commits them all', async (positions, run, env: Record<string, string>) => {
    await forgetPositions();
    const ids = Array.from({ length: 60 }, (_, i) => `rebalance-${run}-${i}`);
    const send = (batch: string[]) => Promise.all(batch.map((id, i) => publish(KAFKA_TOPICS.credit, id, id, i % TOPICS.credit)));
    const processed = async (batch: string[]) => (await Promise.all(batch.map(effects))).filter((n) => n > 0).length;
    const first = await startConsumer(env);
    await send(ids.slice(0, 20));
    await until(async () => (await processed(ids.slice(0, 20))) >= 5, 'the first consumer processes records', 30_000);
    const second = await startConsumer(env);
    await send(ids.slice(20, 40));
    await until(async () => (await processed(ids.slice(0, 40))) === 40, 'both consumers process the records', 120_000);
    await first.kill('SIGTERM');
    await send(ids.slice(40));
    await until(async () => (await processed(ids)) === 60 && (await drained()), 'the second consumer takes every partition over', 120_000);
    await second.kill('SIGTERM');
    for (const id of ids) {
      expect([id, await effects(id)]).toEqual([id, 1]);
    }
    expect(await count(`SELECT count(*) AS n FROM processed_messages WHERE message_id LIKE $1`, [`rebalance-${run}-%`])).toBe(60);
    const duplicates = (app: DemoProcess) => app.output().split('\n').filter((line) => line.includes('[Idempotency]') && line.includes('Duplicate of')).length;
    console.log(`Kafka rebalance (${positions}): duplicates answered by the claim after the rebalances: ${duplicates(first) + duplicates(second)}`);
    expect(await records('credit.DLT')).toBe(0);
    if (env.KAFKA_OFFSETS) {
      expect(await storedPositions()).toEqual(await highWatermarks(KAFKA_TOPICS.credit));
    }
  }, 360_000);

});
