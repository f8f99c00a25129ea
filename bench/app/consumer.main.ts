// The bench app as a RabbitMQ consumer, a child process of the runner: `fork()`ed with
// BENCH_DATABASE_URL and BENCH_RABBITMQ_URL, it consumes the queue the runner names over IPC until
// told to pause, so the runner can fill a queue before consumption starts. It serves no HTTP, and
// Nest's logger is off.
import 'reflect-metadata';
import type { INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { type RmqOptions, Transport } from '@nestjs/microservices';
import { BenchAppModule, PREFETCH } from './bench-app.module.js';
import { connectRedisLeaseStore } from './redis-lease-store.js';

/** What the runner asks of the consumer: to consume a queue (until paused), or to pause. */
export type ConsumerCommand = { consume: string } | { pause: true };

/** The answer to a command: the process's CPU time (user + system, µs) when it arrived, or the error. */
export type ConsumerReply = { cpuMicros: number } | { error: string };

async function bootstrap(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  const brokerUrl = process.env.BENCH_RABBITMQ_URL;
  const send = process.send?.bind(process);
  if (!databaseUrl || !brokerUrl || !send) {
    throw new Error('the bench consumer is started by the bench runner (npm run bench), not by hand');
  }
  const redis = await connectRedisLeaseStore();
  const app = await NestFactory.create(BenchAppModule.register(databaseUrl, redis.store), { logger: false });
  await app.init();
  let consumer: INestMicroservice | undefined;
  const run = async (command: ConsumerCommand): Promise<ConsumerReply> => {
    const { user, system } = process.cpuUsage();
    if ('consume' in command) {
      consumer = app.connectMicroservice<RmqOptions>({
        transport: Transport.RMQ,
        // The runner declares the queue; a broker that does not answer fails the round at once.
        options: { urls: [brokerUrl], queue: command.consume, noAssert: true, noAck: false, prefetchCount: PREFETCH, maxConnectionAttempts: 1 },
      });
      await consumer.listen();
    } else {
      // The transport only: closing the microservice would run the app's shutdown hooks.
      await consumer?.getTransportServer().close();
      consumer = undefined;
    }
    return { cpuMicros: user + system };
  };
  process.on('message', (command: ConsumerCommand) => {
    run(command).then(
      (reply) => send(reply),
      (error: unknown) => send({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
    );
  });
  const stop = () =>
    void app
      .close()
      .then(redis.close)
      .finally(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('disconnect', stop);
  send({ ready: true });
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
