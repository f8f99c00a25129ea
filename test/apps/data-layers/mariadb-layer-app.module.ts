import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { drizzle } from 'drizzle-orm/mysql2';
import { Kysely, MysqlDialect } from 'kysely';
import mysql, { type Pool } from 'mysql2/promise';
import { type IdempotencyDataLayer, Mysql2PoolDataLayer } from 'nestjs-idempotent-consumer';
import type { DataLayerWriter } from 'nestjs-idempotent-consumer/testing';
import type { Type } from '@nestjs/common';
import type { MariaDbLayerName } from './layers.js';
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

/** What a service on one layer on MariaDB is given: the modules of its database, the module's data layer (unset: TypeORM's, the default), and its writer. */
export interface MariaDbLayerDatabase {
  readonly imports: DynamicModule[];
  readonly dataLayer: IdempotencyDataLayer | undefined;
  readonly writer: Type<DataLayerWriter>;
}

/**
 * A service's database on MariaDB at `url` for `layer`: `mysql2` (a mysql2 pool,
 * `Mysql2PoolDataLayer`), `drizzle-mysql2` or `kysely-mysql` (Drizzle or Kysely on that pool), or
 * `typeorm-mariadb` (TypeORM's `mariadb` data source, the default layer); `poolMax` connections.
 */
export function mariaDbLayerDatabase(layer: MariaDbLayerName, url: string, poolMax: number): MariaDbLayerDatabase {
  if (layer === 'typeorm-mariadb') {
    return {
      imports: [TypeOrmModule.forRoot({ type: 'mariadb', url, multipleStatements: true, extra: { connectionLimit: poolMax } })],
      dataLayer: undefined,
      writer: TypeOrmMariaDbWriter,
    };
  }
  return { imports: [Mysql2PoolModule.register(url, poolMax, ON_POOL[layer].orm)], dataLayer: new Mysql2PoolDataLayer({ pool: MYSQL2_POOL }), writer: ON_POOL[layer].writer };
}
