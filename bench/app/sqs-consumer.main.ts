// The bench app as an SQS consumer (`@ssut/nestjs-sqs`), a child process of the runner: `fork()`ed
// with BENCH_DATABASE_URL, BENCH_SQS_ENDPOINT, BENCH_SQS_QUEUE_URL and BENCH_VARIANT, it consumes
// that queue when the runner says so over IPC, until told to pause. It serves no HTTP, and Nest's
// logger is off.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { SqsService } from '@ssut/nestjs-sqs';
import { BenchAppModule } from './bench-app.module.js';
import { BenchSqsModule } from './bench-sqs.handlers.js';
import { answerRunner, type TransportArm } from './consumer-commands.js';
import { connectRedisLeaseStore } from './redis-lease-store.js';

async function bootstrap(): Promise<void> {
  const { BENCH_DATABASE_URL: databaseUrl, BENCH_SQS_ENDPOINT: endpoint, BENCH_SQS_QUEUE_URL: queueUrl, BENCH_VARIANT: variant } = process.env;
  if (!databaseUrl || !endpoint || !queueUrl || !variant) {
    throw new Error('the bench SQS consumer is started by the bench runner (npm run bench), not by hand');
  }
  const redis = await connectRedisLeaseStore();
  const consumers = BenchSqsModule.register(variant as TransportArm, endpoint, queueUrl);
  const app = await NestFactory.create(BenchAppModule.register(databaseUrl, redis.store, { consumers }), { logger: false });
  await app.init();
  // SqsModule starts its consumers with the app; the queue is empty until the runner fills it.
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
  answerRunner({
    consume: async () => consumer.start(),
    pause,
    close: () => app.close().then(redis.close),
  });
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
