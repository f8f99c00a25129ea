import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { createClient, type RedisClientType } from 'redis';
import { AppModule } from '../../../apps/demo-api/src/app.module.js';
import { BullmqFixtureModule } from '../../fixtures/bullmq-fixture.module.js';

/** The demo with the BullMQ processors, as a process of its own, so that a test can SIGKILL it mid-job. */
const app = await NestFactory.create(
  {
    module: class BullmqAppModule {},
    imports: [
      AppModule.register({ databaseUrl: process.env.DATABASE_URL!, idempotency: { purge: { interval: false } } }),
      BullmqFixtureModule.register(createClient({ url: process.env.REDIS_URL }) as RedisClientType, process.env.BULLMQ_PREFIX!),
    ],
  },
  { logger: ['log', 'warn', 'error'] },
);
await app.listen(Number(process.env.PORT), '127.0.0.1');
