// The bench app as a child process of the runner: `fork()`ed with BENCH_DATABASE_URL and
// BENCH_PLATFORM (and, for case 11, BENCH_ENCRYPTION=1 and BENCH_TRACING=1), it listens on a free port and reports it over IPC. Nest's logger is off, so
// the library's info log of every duplicate costs nothing on the replay path.
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { BenchAppModule } from './bench-app.module.js';
import { registerBenchTracing } from './bench-tracing.js';
import { connectRedisLeaseStore } from './redis-lease-store.js';
import { serveToRunner } from './serve-to-runner.js';

async function bootstrap(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  const platform = process.env.BENCH_PLATFORM;
  if (!databaseUrl || (platform !== 'express' && platform !== 'fastify') || !process.send) {
    throw new Error('the bench app is started by the bench runner (npm run bench), not by hand');
  }
  if (process.env.BENCH_TRACING === '1') {
    await registerBenchTracing();
  }
  const adapter = platform === 'fastify' ? new FastifyAdapter() : new ExpressAdapter();
  const redis = await connectRedisLeaseStore();
  const app = await NestFactory.create<INestApplication>(BenchAppModule.register(databaseUrl, redis.store, { encryption: process.env.BENCH_ENCRYPTION === '1' }), adapter, { logger: false });
  await serveToRunner(app, () => app.close().then(redis.close));
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
