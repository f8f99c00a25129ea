import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { initializeTransactionalContext, StorageDriver } from 'typeorm-transactional';
import { AdoptionAppModule } from './adoption-app.module.js';
import { countRoundTrips } from './round-trips.js';

/** The adopting service as a process of its own, so that a test can SIGKILL it mid-handler. */
async function main(): Promise<void> {
  const typeormTransactional = process.env.TYPEORM_TRANSACTIONAL === 'true';
  if (typeormTransactional) {
    initializeTransactionalContext({ storageDriver: StorageDriver.AUTO });
  }
  const app = await NestFactory.create(
    AdoptionAppModule.register({ databaseUrl: process.env.DATABASE_URL!, poolSize: Number(process.env.POOL_SIZE ?? 10), typeormTransactional }),
    { logger: ['log', 'warn', 'error'] },
  );
  countRoundTrips(app);
  await app.listen(Number(process.env.PORT), '127.0.0.1');
}

void main();
