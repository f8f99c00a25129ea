import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../../../apps/demo-api/src/app.module.js';
import { type SqsFixtureOverrides, type SqsFixtureQueues, sqsFixtureModule } from '../../fixtures/sqs-fixture.module.js';

/** The demo with the SQS fixture's consumers, as a process of its own, so that a test can SIGKILL it mid-handler. */
const app = await NestFactory.create(
  {
    module: class SqsAppModule {},
    imports: [
      AppModule.register({ databaseUrl: process.env.DATABASE_URL!, idempotency: { purge: { interval: false } } }),
      sqsFixtureModule(process.env.SQS_ENDPOINT!, JSON.parse(process.env.SQS_QUEUES!) as SqsFixtureQueues, JSON.parse(process.env.SQS_OVERRIDES ?? '{}') as SqsFixtureOverrides),
    ],
  },
  { logger: ['log', 'warn', 'error'] },
);
await app.listen(Number(process.env.PORT), '127.0.0.1');
