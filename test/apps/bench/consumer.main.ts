// The bench app as a message consumer, a child process of the runner: `fork()`ed with
// BENCH_DATABASE_URL, BENCH_CONSUMER (a key of CONSUMERS below), BENCH_VARIANT where the consumer
// runs one variant's handler, and the broker's settings, it consumes what the runner names over
// IPC until told to pause, so the runner can fill a backlog before consumption starts. It serves
// no HTTP, and Nest's logger is off.
import 'reflect-metadata';
import { AmqpConnection } from '@golevelup/nestjs-rabbitmq';
import type { DynamicModule, INestApplication, INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { type KafkaOptions, type RmqOptions, Transport } from '@nestjs/microservices';
import { NatsJetStreamServer } from '@nestjs-plugins/nestjs-nats-jetstream-transport';
import { SqsService } from '@ssut/nestjs-sqs';
import type { Consumer } from 'kafkajs';
import { IdempotencyMetricsService } from 'nestjs-idempotent-consumer';
import { BenchAppModule, PREFETCH } from './bench-app.module.js';
import { BenchGolevelupModule } from './bench-golevelup.handlers.js';
import { BenchJetStreamModule } from './bench-jetstream.controllers.js';
import { BenchKafkaModule, KAFKA_PARTITIONS, KAFKA_TOPICS } from './bench-kafka.controllers.js';
import { BenchSqsModule } from './bench-sqs.handlers.js';
import { answerRunner, type ConsumerControl, type TransportArm } from './consumer-commands.js';
import { connectRedisLeaseStore } from './redis-lease-store.js';

/** The settings a consumer process is started with: BENCH_VARIANT, and the broker's. */
type Settings = Readonly<Record<string, string>> & { readonly BENCH_VARIANT: TransportArm };

/** A consumer the runner can start: its handlers' module (by default the bench app's own), and how it consumes and pauses. */
interface BenchConsumer {
  handlers?(settings: Settings): DynamicModule;
  control(app: INestApplication, settings: Settings): Promise<Omit<ConsumerControl, 'close'>>;
}

/** The consumers, one a broker's client library; `consume` takes a queue's (or durable consumer's) name. */
const CONSUMERS: Record<string, BenchConsumer> = {
  /** Nest's RabbitMQ transport, serving every variant's pattern of the bench app. */
  rabbitmq: {
    control: async (app, { BENCH_RABBITMQ_URL: url }) => {
      let consumer: INestMicroservice | undefined;
      return {
        consume: async (queue) => {
          consumer = app.connectMicroservice<RmqOptions>({
            transport: Transport.RMQ,
            // The runner declares the queue; a broker that does not answer fails the round at once.
            options: { urls: [url], queue, noAssert: true, noAck: false, prefetchCount: PREFETCH, maxConnectionAttempts: 1 },
          });
          await consumer.listen();
        },
        pause: async () => {
          await deliveriesSettled(app.get(IdempotencyMetricsService));
          // The transport only: closing the microservice would run the app's shutdown hooks.
          await consumer?.getTransportServer().close();
          consumer = undefined;
        },
      };
    },
  },
  /** `@nestjs-plugins/nestjs-nats-jetstream-transport` on a durable consumer the runner names. */
  jetstream: {
    handlers: ({ BENCH_VARIANT: variant }) => BenchJetStreamModule.register(variant),
    control: async (app, { BENCH_NATS_URL: servers, BENCH_VARIANT: variant }) => {
      let consumer: INestMicroservice | undefined;
      return {
        consume: async (durable) => {
          consumer = app.connectMicroservice({
            strategy: new NatsJetStreamServer({
              connectionOptions: { servers, name: `idem-bench-${variant}` },
              // As many unacked deliveries as the RabbitMQ consumer's prefetch: one per pool connection.
              consumerOptions: { durable, deliverTo: durable, deliverPolicy: 'All', manualAck: true, ackPolicy: 'Explicit', ackWait: 30_000, maxAckPending: PREFETCH },
            }),
          });
          await consumer.listen();
        },
        pause: async () => {
          // The transport only (it drains its connection): closing the microservice would run the app's shutdown hooks.
          await consumer?.getTransportServer().close();
          consumer = undefined;
        },
      };
    },
  },
  /** `@ssut/nestjs-sqs`, whose consumer (named after the variant) starts with the app on BENCH_SQS_QUEUE_URL. */
  sqs: {
    handlers: (settings) => BenchSqsModule.register(settings.BENCH_VARIANT, settings.BENCH_SQS_ENDPOINT, settings.BENCH_SQS_QUEUE_URL),
    control: async (app, { BENCH_VARIANT: variant }) => {
      const consumer = app.get(SqsService).consumers.get(variant)!.instance;
      // Stopped once its receive in flight has come back, so that none takes the next round's messages
      // before it is timed. (Aborting that receive instead is an 'error' event of sqs-consumer, which ends the process.)
      const pause = async () => {
        consumer.stop();
        while (consumer.status.isPolling) {
          await new Promise((done) => setTimeout(done, 5));
        }
      };
      await pause();
      return { consume: async () => consumer.start(), pause };
    },
  },
  /** `@golevelup/nestjs-rabbitmq`, subscribed with the app to BENCH_GOLEVELUP_QUEUE; paused by cancelling its consumer. */
  golevelup: {
    handlers: (settings) => BenchGolevelupModule.register(settings.BENCH_VARIANT, settings.BENCH_RABBITMQ_URL, settings.BENCH_GOLEVELUP_QUEUE),
    control: async (app) => {
      const connection = app.get(AmqpConnection);
      let [consumerTag] = connection.consumerTags;
      // Deliveries in flight still settle after the cancel; the runner has waited for their effects and acks.
      const pause = () => connection.cancelConsumer(consumerTag);
      await pause();
      return {
        consume: async () => {
          const resumed = await connection.resumeConsumer(consumerTag);
          if (!resumed) {
            throw new Error(`golevelup has no consumer ${consumerTag} to resume`);
          }
          consumerTag = resumed;
        },
        pause,
      };
    },
  },
  /**
   * Nest's Kafka transport (kafkajs) on BENCH_KAFKA_BROKER, in a group of the variant's own: it joins
   * the group once, at start, and is paused and resumed on its topic, not reconnected, so that no
   * round pays for a join.
   */
  kafka: {
    handlers: ({ BENCH_VARIANT: variant }) => BenchKafkaModule.register(variant),
    control: async (app, { BENCH_KAFKA_BROKER: broker, BENCH_VARIANT: variant }) => {
      const server = app.connectMicroservice<KafkaOptions>({
        transport: Transport.KAFKA,
        options: {
          client: { clientId: `idem-bench-${variant}`, brokers: [broker] },
          consumer: { groupId: `idem-bench-${variant}`, maxWaitTimeInMs: 50 },
          subscribe: { fromBeginning: true },
          run: { autoCommit: false, partitionsConsumedConcurrently: KAFKA_PARTITIONS },
        },
      });
      await server.listen();
      const [, consumer] = server.unwrap<[unknown, Consumer]>();
      const topics = [{ topic: KAFKA_TOPICS[variant] }];
      consumer.pause(topics);
      return { consume: async () => consumer.resume(topics), pause: async () => consumer.pause(topics) };
    },
  },
};

async function bootstrap(): Promise<void> {
  const settings = process.env as Settings;
  const consumer = CONSUMERS[settings.BENCH_CONSUMER ?? ''];
  if (!settings.BENCH_DATABASE_URL || !consumer) {
    throw new Error('the bench consumer is started by the bench runner (npm run bench), not by hand');
  }
  const redis = await connectRedisLeaseStore();
  const consumers = consumer.handlers?.(settings);
  const app = await NestFactory.create(BenchAppModule.register(settings.BENCH_DATABASE_URL, redis.store, { consumers }), { logger: false });
  await app.init();
  answerRunner({ ...(await consumer.control(app, settings)), close: () => app.close().then(redis.close) });
}

/**
 * Waits, for up to 10 s, until no idempotent delivery is in flight, so that the transport closes
 * with every message the runner saw processed also acked. In lease mode the handler's work
 * commits before the lease's completion and the ack, so a message can be counted before it is
 * settled; a transport closed then would hand it back to the queue.
 */
async function deliveriesSettled(metrics: IdempotencyMetricsService): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (metrics.inFlight().some(({ deliveries }) => deliveries > 0) && performance.now() < deadline) {
    await new Promise((done) => setTimeout(done, 10));
  }
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
