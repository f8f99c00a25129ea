import 'reflect-metadata';
import { type DynamicModule, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { drizzle } from 'drizzle-orm/mysql2';
import { Kysely, MysqlDialect } from 'kysely';
import mysql, { type Pool } from 'mysql2/promise';
import { Mysql2PoolDataLayer } from 'nestjs-idempotent-consumer';
import { DataLayerContractModule } from 'nestjs-idempotent-consumer/testing';
import { MARIADB_LAYERS, type MariaDbLayerName } from './layers.js';
import { DrizzleMySqlWriter, KyselyMySqlWriter, MARIADB_DB, MYSQL2_POOL, Mysql2Writer, TypeOrmMariaDbWriter } from './mariadb-layer-writers.js';

/** The service's mysql2 pool, and the Drizzle or Kysely instance on it. */
@Module({})
class Mysql2PoolModule {
  static register(url: string, poolMax: number, orm?: (pool: Pool) => unknown): DynamicModule {
    const pool = { provide: MYSQL2_POOL, useFactory: () => mysql.createPool({ uri: url, connectionLimit: poolMax, multipleStatements: true }) };
    const db = { provide: MARIADB_DB, inject: [MYSQL2_POOL], useFactory: (created: Pool) => orm?.(created) ?? null };
    return { module: Mysql2PoolModule, global: true, providers: [pool, db], exports: [MYSQL2_POOL, MARIADB_DB] };
  }
}

/** What each layer on the pool writes through. */
const ON_POOL = {
  mysql2: { writer: Mysql2Writer, orm: undefined },
  'drizzle-mysql2': { writer: DrizzleMySqlWriter, orm: (pool: Pool) => drizzle({ client: pool }) },
  // Kysely takes the callback pool under mysql2/promise's.
  'kysely-mysql': { writer: KyselyMySqlWriter, orm: (pool: Pool) => new Kysely({ dialect: new MysqlDialect({ pool: pool.pool }) }) },
};

/**
 * The contract's service (`DataLayerContractModule`) on a data layer on MariaDB, as a process of its
 * own (the contract SIGKILLs one mid-handler): LAYER `mysql2` (a mysql2 pool, `Mysql2PoolDataLayer`),
 * `drizzle-mysql2` or `kysely-mysql` (Drizzle or Kysely on that pool), or `typeorm-mariadb`
 * (TypeORM's `mariadb` data source, the default layer).
 */
async function main(): Promise<void> {
  const layer = process.env.LAYER as MariaDbLayerName;
  if (!MARIADB_LAYERS.includes(layer)) {
    throw new Error(`LAYER must be one of ${MARIADB_LAYERS.join(', ')}; got ${layer}`);
  }
  const url = process.env.DATABASE_URL!;
  const poolMax = process.env.POOL_MAX === undefined ? 10 : Number(process.env.POOL_MAX);
  const module =
    layer !== 'typeorm-mariadb'
      ? DataLayerContractModule.register({
          dataLayer: new Mysql2PoolDataLayer({ pool: MYSQL2_POOL }),
          writer: ON_POOL[layer].writer,
          imports: [Mysql2PoolModule.register(url, poolMax, ON_POOL[layer].orm)],
        })
      : DataLayerContractModule.register({
          writer: TypeOrmMariaDbWriter,
          imports: [TypeOrmModule.forRoot({ type: 'mariadb', url, multipleStatements: true, extra: { connectionLimit: poolMax } })],
        });
  const app = await NestFactory.create(module, { logger: ['log', 'warn', 'error'] });
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT), '127.0.0.1');
}

void main();
