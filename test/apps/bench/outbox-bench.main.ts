// The outbox bench app as a child process of the runner (case 18): `fork()`ed with
// BENCH_DATABASE_URL, BENCH_RABBITMQ_URL, BENCH_OUTBOX_QUEUE, BENCH_OUTBOX_TABLE and
// BENCH_OUTBOX_RELAY (1: this process runs the relay), on Express; it counts the queries it sends,
// listens on a free port and reports it over IPC, as the bench app does. Nest's logger is off.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { OutboxBenchModule } from './outbox-bench.module.js';
import { countRoundTrips } from './round-trips.js';
import { serveToRunner } from './serve-to-runner.js';

async function bootstrap(): Promise<void> {
  const { BENCH_DATABASE_URL: databaseUrl, BENCH_RABBITMQ_URL: rabbitmqUrl, BENCH_OUTBOX_QUEUE: queue, BENCH_OUTBOX_TABLE: table } = process.env;
  if (!databaseUrl || !rabbitmqUrl || !queue || !table || !process.send) {
    throw new Error('the outbox bench app is started by the bench runner (npm run bench), not by hand');
  }
  countRoundTrips();
  const module = OutboxBenchModule.register({ databaseUrl, rabbitmqUrl, queue, table, relay: process.env.BENCH_OUTBOX_RELAY === '1' });
  const app = await NestFactory.create(module, new ExpressAdapter(), { logger: false });
  await serveToRunner(app);
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
