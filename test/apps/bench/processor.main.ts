// The bench app as BullMQ workers, a child process of the runner: `fork()`ed with
// BENCH_DATABASE_URL and BENCH_BULLMQ_PREFIX, it runs the worker of the arm the runner names over
// IPC until told to pause, so the runner can fill a queue first. It serves no HTTP, and Nest's logger is off.
import 'reflect-metadata';
import { BullModule } from '@nestjs/bullmq';
import type { WorkerHost } from '@nestjs/bullmq';
import { NestFactory } from '@nestjs/core';
import { createClient } from 'redis';
import { BenchAppModule } from './bench-app.module.js';
import { IdempotentCreditsProcessor, PlainCreditsProcessor, PROCESSOR_QUEUES, type ProcessorArm } from './bench-processors.js';
import { connectRedisLeaseStore } from './redis-lease-store.js';

/** What the runner asks: to run an arm's worker (until paused), or to pause it. */
export type ProcessorCommand = { run: ProcessorArm } | { pause: ProcessorArm };

/** The answer to a command: the process's CPU time (user + system, µs) when it arrived, or the error. */
export type ProcessorReply = { cpuMicros: number } | { error: string };

async function bootstrap(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  const prefix = process.env.BENCH_BULLMQ_PREFIX;
  const send = process.send?.bind(process);
  if (!databaseUrl || !prefix || !send) {
    throw new Error('the bench processor is started by the bench runner (npm run bench), not by hand');
  }
  const redis = await connectRedisLeaseStore();
  // BullMQ takes a node-redis client (its own options need ioredis) and leaves it to its owner to close.
  const connection = createClient({ url: process.env.BENCH_REDIS_URL });
  const app = await NestFactory.create(
    {
      module: class BenchProcessorModule {},
      imports: [
        BenchAppModule.register(databaseUrl, redis.store),
        BullModule.forRoot({ connection, prefix }),
        BullModule.registerQueue(...Object.values(PROCESSOR_QUEUES).map((name) => ({ name }))),
      ],
      providers: [PlainCreditsProcessor, IdempotentCreditsProcessor],
    },
    { logger: false },
  );
  await app.init();
  const workers: Record<ProcessorArm, WorkerHost> = { plain: app.get(PlainCreditsProcessor), idempotent: app.get(IdempotentCreditsProcessor) };
  const running = new Set<ProcessorArm>();
  const run = async (command: ProcessorCommand): Promise<ProcessorReply> => {
    const { user, system } = process.cpuUsage();
    if ('run' in command) {
      const { worker } = workers[command.run];
      if (running.has(command.run)) {
        worker.resume();
      } else {
        running.add(command.run);
        void worker.run();
      }
    } else {
      await workers[command.pause].worker.pause();
    }
    return { cpuMicros: user + system };
  };
  process.on('message', (command: ProcessorCommand) => {
    run(command).then(
      (reply) => send(reply),
      (error: unknown) => send({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
    );
  });
  const stop = () =>
    void app
      .close()
      .then(redis.close)
      .then(() => connection.close())
      .finally(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('disconnect', stop);
  send({ ready: true });
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
