import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { DataLayerContractModule } from 'nestjs-idempotent-consumer/testing';
import { MARIADB_LAYERS, type MariaDbLayerName } from './layers.js';
import { mariaDbLayerDatabase } from './mariadb-layer-app.module.js';

/**
 * The contract's service (`DataLayerContractModule`) on a data layer on MariaDB (LAYER, one of
 * `MARIADB_LAYERS`), as a process of its own: the contract SIGKILLs one mid-handler.
 */
async function main(): Promise<void> {
  const layer = process.env.LAYER as MariaDbLayerName;
  if (!MARIADB_LAYERS.includes(layer)) {
    throw new Error(`LAYER must be one of ${MARIADB_LAYERS.join(', ')}; got ${layer}`);
  }
  const poolMax = process.env.POOL_MAX === undefined ? 10 : Number(process.env.POOL_MAX);
  const { imports, dataLayer, writer } = mariaDbLayerDatabase(layer, process.env.DATABASE_URL!, poolMax);
  const app = await NestFactory.create(DataLayerContractModule.register({ dataLayer, writer, imports }), { logger: ['log', 'warn', 'error'] });
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT), '127.0.0.1');
}

void main();
