import { PREFETCH } from '../../test/apps/bench/bench-app.module.js';
import { type ConsumerArm, CREDIT_PATTERNS } from '../../test/apps/bench/bench-messages.controller.js';
import { JETSTREAM_SUBJECTS } from '../../test/apps/bench/bench-jetstream.controllers.js';
import { KAFKA_PARTITIONS, KAFKA_TOPICS } from '../../test/apps/bench/bench-kafka.controllers.js';
import { PROCESSOR_QUEUES } from '../../test/apps/bench/bench-processors.js';
import { SQS_BATCH_SIZE } from '../../test/apps/bench/bench-sqs.handlers.js';
import type { TransportArm } from '../../test/apps/bench/consumer-commands.js';
import { NATS_URL, RABBITMQ_URL, REDIS_URL } from '../../test/support/brokers.js';
import { Fauxqs } from '../../test/support/fauxqs.js';
import { startKafkaBroker } from '../../test/support/kafka-broker.js';
import { openBenchBroker, openBenchBullQueues, openBenchJetStream, openBenchKafka } from '../../test/support/broker-clients.js';
import { type BenchConsumerProcess, startConsumerProcess, startProcessorProcess } from '../../test/support/bench-processes.js';
import { type Backlog, type DrainedBacklogs, drainBacklogs } from '../support/drain-backlog.js';
import { type BenchCase, type BenchContext, type CaseReport, CaseSkipped, emptyReport, reportAgainstPlain } from './bench-case.js';

/** A broker of a consumer row, open for one run. */
export interface ConsumerBroker<Variant extends ConsumerArm> {
  /** Makes `variant`'s queue (stream, job queue) on the broker and starts the consumer that drains it, idle. */
  backlog(variant: Variant): Promise<Backlog>;
  /** Removes what the run made on the broker and disconnects; the backlogs' consumers are stopped by then. */
  close(): Promise<void>;
}

/**
 * A row of the consumer cases: the credit handler on one broker's consumer, idempotent against the
 * very same handler and transaction without the module, each arm in a process of its own (as in
 * case 1: the plain one never pays for what the module switches on once used) unless `details`
 * says otherwise. Adding a broker is a row here, its line in `cases/index.ts`, and its entry in
 * `test/apps/bench/consumer.main.ts`.
 */
export interface ConsumerRow<Variant extends ConsumerArm = TransportArm> {
  readonly id: number;
  readonly title: string;
  /** How much the consumer takes at once, as the rows and the chart name it: 'prefetch 20'. */
  readonly setting: string;
  /** What the broker delivers, for the floor and the chart. */
  readonly deliveries: 'messages' | 'jobs';
  /** Facts of the method, for the results' details. */
  readonly details: Record<string, unknown>;
  /** Where the broker is, for the skip when it does not answer. */
  readonly where: string;
  /** Connects to (or starts) the broker; `run` names what this run makes on it. */
  open(context: BenchContext, run: string): Promise<ConsumerBroker<Variant>>;
}

/** The backlog `name` (a queue, a durable consumer) that `consumer` drains, filled by `fill`, its unsettled messages counted by `unsettled`. */
function drainedBy(consumer: BenchConsumerProcess, name: string, fill: Backlog['fill'], unsettled: Backlog['unsettled']): Backlog {
  return { fill, consume: () => consumer.consume(name), pause: () => consumer.pause(), unsettled, stop: consumer.stop };
}

/** The consumer `consumer` of `test/apps/bench/consumer.main.ts` for `variant`, with the broker's settings `env`. */
function startConsumer({ database, runtimes }: BenchContext, consumer: string, variant: TransportArm, env: Record<string, string>): Promise<BenchConsumerProcess> {
  return startConsumerProcess(consumer, runtimes.headline, { BENCH_DATABASE_URL: database.url, BENCH_VARIANT: variant, ...env });
}

/**
 * The run's queues on RabbitMQ, one a variant (not durable, transient messages), each drained by
 * the consumer `start` makes for it; `pattern` wraps a message's body as Nest's RMQ transport reads it.
 */
async function rabbitmqQueues<Variant extends ConsumerArm>(
  run: string,
  start: (variant: Variant, queue: string, url: string) => Promise<BenchConsumerProcess>,
  pattern?: (variant: Variant) => string,
): Promise<ConsumerBroker<Variant>> {
  const broker = await openBenchBroker();
  const queues: string[] = [];
  return {
    backlog: async (variant) => {
      const queue = `${run}-${variant}`;
      await broker.declareQueue(queue);
      queues.push(queue);
      return drainedBy(
        await start(variant, queue, broker.url),
        queue,
        (messages) => broker.publish(queue, messages.map((message) => ({ ...message, pattern: pattern?.(variant) }))),
        () => broker.readyMessages(queue),
      );
    },
    close: async () => {
      for (const queue of queues) {
        await broker.deleteQueue(queue);
      }
      await broker.close();
    },
  };
}

/** A row on RabbitMQ at prefetch `PREFETCH`: its queues (`rabbitmqQueues`), each drained by the consumer `start` makes. */
function rabbitmqRow<Variant extends ConsumerArm>(
  id: number,
  title: string,
  start: (context: BenchContext, variant: Variant, queue: string, url: string) => Promise<BenchConsumerProcess>,
  pattern?: (variant: Variant) => string,
): ConsumerRow<Variant> {
  const where = `RabbitMQ at ${RABBITMQ_URL}; set RABBITMQ_URL`;
  const open = (context: BenchContext, run: string) => rabbitmqQueues<Variant>(run, (variant, queue, url) => start(context, variant, queue, url), pattern);
  return { id, title, setting: `prefetch ${PREFETCH}`, deliveries: 'messages', details: { prefetch: PREFETCH, persistent: false }, where, open };
}

/** Nest's RabbitMQ transport: an `@EventPattern` the module acks, the plain handler acking itself; one process serves every variant's pattern. */
export const RABBITMQ = rabbitmqRow<ConsumerArm>(
  4,
  'RabbitMQ consumer',
  ({ database, runtimes }, _variant, _queue, url) => startConsumerProcess('rabbitmq', runtimes.headline, { BENCH_DATABASE_URL: database.url, BENCH_RABBITMQ_URL: url }),
  (variant) => CREDIT_PATTERNS[variant],
);

/** A BullMQ processor, the claim on the job id; one worker process for both arms, which it runs one at a time. */
const BULLMQ: ConsumerRow = {
  id: 12,
  title: 'BullMQ processor',
  setting: `concurrency ${PREFETCH}`,
  deliveries: 'jobs',
  details: { concurrency: PREFETCH, processes: 'one for both arms' },
  where: `Redis at ${REDIS_URL}; set REDIS_URL`,
  async open({ database, runtimes }, run) {
    const processor = await startProcessorProcess(runtimes.headline, { BENCH_DATABASE_URL: database.url, BENCH_BULLMQ_PREFIX: run });
    const queues = openBenchBullQueues(run);
    return {
      backlog: async (variant) => ({
        fill: (messages) => queues.add(PROCESSOR_QUEUES[variant], messages),
        consume: () => processor.run(variant),
        pause: () => processor.pause(variant),
        unsettled: () => queues.unsettled(PROCESSOR_QUEUES[variant]),
        stop: processor.stop,
      }),
      close: async () => {
        await processor.stop();
        await queues.close();
      },
    };
  },
};

/** A durable JetStream consumer of `@nestjs-plugins/nestjs-nats-jetstream-transport`, the module acking; in-memory work-queue streams. */
const NATS_JETSTREAM: ConsumerRow = {
  id: 13,
  title: 'NATS JetStream consumer',
  setting: `maxAckPending ${PREFETCH}`,
  deliveries: 'messages',
  details: { maxAckPending: PREFETCH, storage: 'memory' },
  where: `NATS with JetStream at ${NATS_URL}; set NATS_URL`,
  async open(context, run) {
    const jetStream = await openBenchJetStream();
    const streams: string[] = [];
    return {
      backlog: async (variant) => {
        // The stream of each variant's subject, names of the bench's own; the plugin names the durable consumer `<run>-<subject>`.
        const stream = `IDEM_BENCH_JETSTREAM_${variant.toUpperCase()}`;
        await jetStream.createStream(stream, JETSTREAM_SUBJECTS[variant]);
        streams.push(stream);
        return drainedBy(
          await startConsumer(context, 'jetstream', variant, { BENCH_NATS_URL: jetStream.url }),
          run,
          (messages) => jetStream.publish(JETSTREAM_SUBJECTS[variant], messages),
          () => jetStream.messages(stream),
        );
      },
      close: async () => {
        for (const stream of streams) {
          await jetStream.deleteStream(stream);
        }
        await jetStream.close();
      },
    };
  },
};

/** `@ssut/nestjs-sqs` on fauxqs, an SQS emulator the case starts: the message is deleted after the claim's commit. */
const SQS: ConsumerRow = {
  id: 14,
  title: 'SQS consumer (fauxqs)',
  setting: `batches of ${SQS_BATCH_SIZE}`,
  deliveries: 'messages',
  details: { batchSize: SQS_BATCH_SIZE, broker: 'fauxqs (an SQS emulator), on the runner' },
  where: 'the SQS emulator fauxqs, which the case starts',
  async open(context, run) {
    const fauxqs = await Fauxqs.start();
    return {
      backlog: async (variant) => {
        // SQS's default visibility: a receive is never taken back within a round.
        const { url } = await fauxqs.createQueue(`${run}-${variant}`, 30);
        return drainedBy(
          await startConsumer(context, 'sqs', variant, { BENCH_SQS_ENDPOINT: fauxqs.endpoint, BENCH_SQS_QUEUE_URL: url }),
          url,
          (messages) => fauxqs.send(url, messages.map(({ data }) => JSON.stringify(data))),
          () => fauxqs.depth(url),
        );
      },
      close: () => fauxqs.stop(),
    };
  },
};

/** `@RabbitSubscribe` of `@golevelup/nestjs-rabbitmq`, which acks after the claim's commit; paused by cancelling its consumer. */
const GOLEVELUP = rabbitmqRow<TransportArm>(15, 'RabbitMQ consumer through @golevelup/nestjs-rabbitmq', (context, variant, queue, url) =>
  startConsumer(context, 'golevelup', variant, { BENCH_RABBITMQ_URL: url, BENCH_GOLEVELUP_QUEUE: queue }),
);

/**
 * Nest's Kafka transport (kafkajs) with autoCommit off: the module commits each offset after the
 * claim's commit, the plain handler after its transaction. The broker is librdkafka's mock cluster,
 * which the case starts as the Kafka suites do (test/support/kafka-broker.ts).
 */
const KAFKA: ConsumerRow = {
  id: 19,
  title: 'Kafka consumer (kafkajs)',
  setting: `${KAFKA_PARTITIONS} partitions`,
  deliveries: 'messages',
  details: { partitions: KAFKA_PARTITIONS, broker: "librdkafka's mock cluster, on the runner" },
  where: "librdkafka's mock cluster, which the case starts (apt-get install librdkafka-dev)",
  async open(context) {
    const broker = await startKafkaBroker(Object.fromEntries(Object.values(KAFKA_TOPICS).map((topic) => [topic, KAFKA_PARTITIONS])));
    const kafka = await openBenchKafka(broker.bootstrap).catch(async (error: unknown) => {
      await broker.stop();
      throw error;
    });
    return {
      backlog: async (variant) => {
        const topic = KAFKA_TOPICS[variant];
        return drainedBy(
          await startConsumer(context, 'kafka', variant, { BENCH_KAFKA_BROKER: broker.bootstrap }),
          topic,
          (messages) => kafka.publish(topic, messages),
          // Nest names the group `<groupId>-server`.
          () => kafka.uncommitted(topic, `idem-bench-${variant}-server`),
        );
      },
      close: async () => {
        await kafka.close();
        await broker.stop();
      },
    };
  },
};

/**
 * Drains `row`'s broker with a consumer per variant (`drainBacklogs`; `label` names the rounds'
 * message ids). Once they stop, a delivery a consumer never settled is back on (or still in) its
 * backlog: the run fails unless none is.
 * @throws CaseSkipped when the broker does not answer.
 */
export async function drainRow<Variant extends ConsumerArm>(
  context: BenchContext,
  label: string,
  row: ConsumerRow<Variant>,
  variants: readonly Variant[],
): Promise<DrainedBacklogs<Variant>> {
  const broker = await row.open(context, `idem-bench-${label}-${process.pid}-${Date.now().toString(36)}`).catch((error: unknown) => {
    throw new CaseSkipped(`${row.where} did not answer (${(error as Error).message})`);
  });
  const backlogs = {} as Record<Variant, Backlog>;
  const stopAll = () => Promise.all(Object.values<Backlog>(backlogs).map((backlog) => backlog.stop()));
  try {
    for (const variant of variants) {
      backlogs[variant] = await broker.backlog(variant);
    }
    const drained = await drainBacklogs(context, label, backlogs);
    await stopAll();
    for (const variant of variants) {
      const unsettled = await backlogs[variant].unsettled();
      if (unsettled !== 0) {
        throw new Error(`the ${variant} backlog held ${unsettled} ${row.deliveries} once its consumer stopped: delivered in a round, never settled`);
      }
    }
    return drained;
  } finally {
    await stopAll();
    await broker.close();
  }
}

/** The case of `row`: idempotent / plain throughput, floor 0.85. */
function consumerCase(row: ConsumerRow): BenchCase {
  return {
    id: row.id,
    title: row.title,
    async run(context): Promise<CaseReport> {
      const drained = await drainRow(context, `c${row.id}`, row, ['plain', 'idempotent']);
      const report = emptyReport();
      const ratio = reportAgainstPlain(report, {
        variant: row.setting,
        floorLabel: `idempotent / plain ${row.deliveries} per second`,
        floor: 0.85,
        chartTitle: `${row.id} · ${row.title} · ${row.setting}`,
        unit: row.deliveries === 'jobs' ? 'jobs/s' : 'msg/s',
        plain: drained.medians.plain,
        idempotent: drained.medians.idempotent,
      });
      report.details = { ...row.details, ...drained, ratio };
      return report;
    },
  };
}

/** The consumer cases, one row a broker; `cases/index.ts` places each by its number. */
export const [rabbitmqConsumer, bullmqProcessor, natsJetStreamConsumer, sqsConsumer, golevelupRabbitmqConsumer, kafkaConsumer] = [RABBITMQ, BULLMQ, NATS_JETSTREAM, SQS, GOLEVELUP, KAFKA].map(
  consumerCase,
);
