import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../../../apps/demo-api/src/app.module.js';
import { GOLEVELUP_CONSUMERS, GolevelupFixtureModule } from '../../fixtures/golevelup-rabbitmq.module.js';

/**
 * The demo with golevelup consumers (GOLEVELUP_CONSUMERS: `fixture`, `auto-ack`, `ack-on-error`),
 * as a process of its own: golevelup require()s the ESM-only Nest 12, which Jest on Node 20
 * cannot, and a process can be SIGKILLed mid-handler.
 */
const consumer = GOLEVELUP_CONSUMERS[process.env.GOLEVELUP_CONSUMERS ?? 'fixture'];
const app = await NestFactory.create(
  {
    module: class GolevelupAppModule {},
    imports: [
      AppModule.register({ databaseUrl: process.env.DATABASE_URL!, idempotency: { purge: { interval: false } } }),
      GolevelupFixtureModule.register(process.env.RABBITMQ_URL!, [consumer]),
    ],
  },
  { logger: ['log', 'warn', 'error'] },
);
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT), '127.0.0.1');
