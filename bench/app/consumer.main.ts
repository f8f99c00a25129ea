// The bench app as a RabbitMQ consumer, a child process of the runner: `fork()`ed with
// BENCH_DATABASE_URL and BENCH_RABBITMQ_URL, it consumes the queue the runner names over IPC until
// told to pause, so the runner can fill a queue before consumption starts. It serves no HTTP, and
// Nest's logger is off.
import 'reflect-metadata';
import type { INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { type RmqOptions, Transport } from '@nestjs/microservices';
import { BenchAppModule, PREFETCH } from './bench-app.module.js';
import { IdempotencyMetricsService } from 'nestjs-idempotent-consumer';
import { answerRunner } from './consumer-commands.js';
import { connectRedisLeaseStore } from './redis-lease-store.js';

async function bootstrap(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  const brokerUrl = process.env.BENCH_RABBITMQ_URL;
  if (!databaseUrl || !brokerUrl) {
    throw new Error('the bench consumer is started by the bench runner (npm run bench), not by hand');
  }
  const redis = await connectRedisLeaseStore();
  const app = await NestFactory.create(BenchAppModule.register(databaseUrl, redis.store), { logger: false });
  await app.init();
  let consumer: INestMicroservice | undefined;
  answerRunner({
    consume: async (queue) => {
      consumer = app.connectMicroservice<RmqOptions>({
        transport: Transport.RMQ,
        // The runner declares the queue; a broker that does not answer fails the round at once.
        options: { urls: [brokerUrl], queue, noAssert: true, noAck: false, prefetchCount: PREFETCH, maxConnectionAttempts: 1 },
      });
      await consumer.listen();
    },
    pause: async () => {
      await deliveriesSettled(app.get(IdempotencyMetricsService));
      // The transport only: closing the microservice would run the app's shutdown hooks.
      await consumer?.getTransportServer().close();
      consumer = undefined;
    },
    close: () => app.close().then(redis.close),
  });
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
