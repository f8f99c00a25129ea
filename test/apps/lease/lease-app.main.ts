import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { RedisLeaseStore } from 'nestjs-idempotent-consumer';
import { createClient } from 'redis';
import { AppModule } from '../../../apps/demo-api/src/app.module.js';
import { LeaseShapesModule } from '../../fixtures/lease-shapes.module.js';

/** The demo with the lease-mode handlers, as a process of its own, so that a test can SIGKILL it mid-handler. */
const redis = await createClient({ url: process.env.REDIS_URL }).connect();
const app = await NestFactory.create(
  {
    module: class LeaseAppModule {},
    imports: [
      AppModule.register({
        databaseUrl: process.env.DATABASE_URL!,
        idempotency: { purge: { interval: false }, stores: { redis: new RedisLeaseStore(redis, process.env.REDIS_PREFIX) } },
      }),
      LeaseShapesModule,
    ],
  },
  { logger: ['log', 'warn', 'error'] },
);
await app.listen(Number(process.env.PORT), '127.0.0.1');
