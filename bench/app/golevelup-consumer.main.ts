// The bench app as a RabbitMQ consumer through `@golevelup/nestjs-rabbitmq`, a child process of the
// runner: `fork()`ed with BENCH_DATABASE_URL, BENCH_RABBITMQ_URL, BENCH_GOLEVELUP_QUEUE and
// BENCH_VARIANT, it consumes that queue when the runner says so over IPC, until told to pause. It
// serves no HTTP, and Nest's logger is off.
import 'reflect-metadata';
import { AmqpConnection } from '@golevelup/nestjs-rabbitmq';
import { NestFactory } from '@nestjs/core';
import { BenchAppModule } from './bench-app.module.js';
import { BenchGolevelupModule } from './bench-golevelup.handlers.js';
import { answerRunner, type TransportArm } from './consumer-commands.js';
import { connectRedisLeaseStore } from './redis-lease-store.js';

async function bootstrap(): Promise<void> {
  const { BENCH_DATABASE_URL: databaseUrl, BENCH_RABBITMQ_URL: brokerUrl, BENCH_GOLEVELUP_QUEUE: queue, BENCH_VARIANT: variant } = process.env;
  if (!databaseUrl || !brokerUrl || !queue || !variant) {
    throw new Error('the bench golevelup consumer is started by the bench runner (npm run bench), not by hand');
  }
  const redis = await connectRedisLeaseStore();
  const consumers = BenchGolevelupModule.register(variant as TransportArm, brokerUrl, queue);
  const app = await NestFactory.create(BenchAppModule.register(databaseUrl, redis.store, { consumers }), { logger: false });
  await app.init();
  // golevelup subscribes with the app; the queue is empty until the runner fills it.
  const connection = app.get(AmqpConnection);
  let [consumerTag] = connection.consumerTags;
  const pause = () => connection.cancelConsumer(consumerTag);
  await pause();
  answerRunner({
    consume: async () => {
      const resumed = await connection.resumeConsumer(consumerTag);
      if (!resumed) {
        throw new Error(`golevelup has no consumer ${consumerTag} to resume`);
      }
      consumerTag = resumed;
    },
    // Deliveries in flight still settle after the cancel; the runner has waited for their effects and acks.
    pause,
    close: () => app.close().then(redis.close),
  });
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
