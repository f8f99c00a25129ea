import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../../../apps/demo-api/src/app.module.js';
import { GraphqlAppModule } from './graphql-app.module.js';

/** The demo with the GraphQL mutations, as a process of its own, so that a test can SIGKILL it mid-resolver. */
const app = await NestFactory.create(
  {
    module: class GraphqlAppMainModule {},
    imports: [AppModule.register({ databaseUrl: process.env.DATABASE_URL!, idempotency: { purge: { interval: false } } }), GraphqlAppModule],
  },
  { logger: ['log', 'warn', 'error'] },
);
await app.listen(Number(process.env.PORT), '127.0.0.1');
