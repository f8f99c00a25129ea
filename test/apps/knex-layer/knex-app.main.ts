import 'reflect-metadata';
import { Global, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import knex from 'knex';
import { DataLayerContractModule } from 'nestjs-idempotent-consumer/testing';
import { KnexDataLayer } from './knex.data-layer.js';
import { KnexWriter } from './knex.writer.js';

const KNEX = Symbol('KNEX');
const layer = new KnexDataLayer(KNEX);

/** The application's knex instance (`POOL_MAX` connections, else 10) and its data layer, for every module. */
@Global()
@Module({
  providers: [
    {
      provide: KNEX,
      useFactory: () => knex({ client: 'pg', connection: process.env.DATABASE_URL, pool: { min: 0, max: Number(process.env.POOL_MAX ?? 10) } }),
    },
    { provide: KnexDataLayer, useValue: layer },
  ],
  exports: [KNEX, KnexDataLayer],
})
class KnexModule {}

/** The contract's service on the knex layer, as a process of its own, so that the contract can SIGKILL it mid-handler. */
async function main(): Promise<void> {
  const app = await NestFactory.create(DataLayerContractModule.register({ dataLayer: layer, writer: KnexWriter, imports: [KnexModule] }), {
    logger: ['log', 'warn', 'error'],
  });
  await app.listen(Number(process.env.PORT), '127.0.0.1');
}

void main();
