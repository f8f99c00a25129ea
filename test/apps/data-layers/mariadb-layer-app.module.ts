import { type DynamicModule, type FactoryProvider, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MikroORM } from '@mikro-orm/core';
import { MariaDbDriver } from '@mikro-orm/mariadb';
import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { drizzle } from 'drizzle-orm/mysql2';
import { Kysely, MysqlDialect } from 'kysely';
import mariadb, { type Pool as MariaDbPool } from 'mariadb';
import mysql, { type Pool } from 'mysql2/promise';
import { type IdempotencyDataLayer, MariaDbPoolDataLayer, MikroOrmDataLayer, Mysql2PoolDataLayer } from 'nestjs-idempotent-consumer';
import type { DataLayerWriter } from 'nestjs-idempotent-consumer/testing';
import type { Type } from '@nestjs/common';
import { LayerCreditSchema } from './layer-writers.js';
import type { MariaDbLayerName } from './layers.js';
import {
  DrizzleMySqlWriter,
  KyselyMySqlWriter,
  MARIADB_DB,
  MARIADB_POOL,
  MariaDbWriter,
  MikroOrmMariaDbWriter,
  MYSQL2_POOL,
  Mysql2Writer,
  PrismaMariaDbWriter,
  TypeOrmMariaDbWriter,
} from './mariadb-layer-writers.js';
import { PrismaClient } from './prisma-mariadb/generated/client.js';

/** The service's database, for every module (the contract's too): a pool and the layer's instance on it, or MikroORM. */
@Module({})
class MariaDbDatabaseModule {
  static register(...providers: FactoryProvider[]): DynamicModule {
    return { module: MariaDbDatabaseModule, global: true, providers, exports: providers.map(({ provide }) => provide) };
  }
}

/** A pool under `token` and, under `MARIADB_DB`, the layer's instance on it (`orm`; none: null). */
function onPool<P>(token: symbol, createPool: () => P, orm: (pool: P) => unknown = () => null): DynamicModule {
  return MariaDbDatabaseModule.register({ provide: token, useFactory: createPool }, { provide: MARIADB_DB, inject: [token], useFactory: orm });
}

/** A pool of the mariadb connector on `url` (`mysql://user[:password]@host[:port]/database`: its own parser reads `mariadb://` alone). */
function mariaDbPool(url: string, poolMax: number): MariaDbPool {
  const { hostname, port, username, password, pathname } = new URL(url);
  return mariadb.createPool({
    host: hostname,
    port: port ? Number(port) : 3306,
    user: decodeURIComponent(username),
    password: password ? decodeURIComponent(password) : undefined,
    database: decodeURIComponent(pathname.slice(1)),
    connectionLimit: poolMax,
    multipleStatements: true,
  });
}

/** What a service on one layer on MariaDB is given: the modules of its database, the module's data layer (unset: TypeORM's, the default), and its writer. */
export interface MariaDbLayerDatabase {
  readonly imports: DynamicModule[];
  readonly dataLayer: IdempotencyDataLayer | undefined;
  readonly writer: Type<DataLayerWriter>;
}

/**
 * A service's database on MariaDB at `url` for `layer`: `mysql2` (a mysql2 pool,
 * `Mysql2PoolDataLayer`), `drizzle-mysql2` or `kysely-mysql` (Drizzle or Kysely on that pool);
 * `mariadb` (a pool of the mariadb connector, `MariaDbPoolDataLayer`) or `prisma-mariadb` (Prisma
 * on that pool through `@prisma/adapter-mariadb`); `mikro-orm-mariadb` (MikroORM's
 * `MariaDbDriver`, `MikroOrmDataLayer`); or `typeorm-mariadb` (TypeORM's `mariadb` data source,
 * the default layer); `poolMax` connections.
 */
export function mariaDbLayerDatabase(layer: MariaDbLayerName, url: string, poolMax: number): MariaDbLayerDatabase {
  const onMysql2 = (writer: Type<DataLayerWriter>, orm?: (pool: Pool) => unknown): MariaDbLayerDatabase => ({
    imports: [onPool(MYSQL2_POOL, () => mysql.createPool({ uri: url, connectionLimit: poolMax, multipleStatements: true }), orm)],
    dataLayer: new Mysql2PoolDataLayer({ pool: MYSQL2_POOL }),
    writer,
  });
  const onMariaDb = (writer: Type<DataLayerWriter>, orm?: (pool: MariaDbPool) => unknown): MariaDbLayerDatabase => ({
    imports: [onPool(MARIADB_POOL, () => mariaDbPool(url, poolMax), orm)],
    dataLayer: new MariaDbPoolDataLayer({ pool: MARIADB_POOL }),
    writer,
  });
  const byLayer: Record<MariaDbLayerName, () => MariaDbLayerDatabase> = {
    mysql2: () => onMysql2(Mysql2Writer),
    'drizzle-mysql2': () => onMysql2(DrizzleMySqlWriter, (pool) => drizzle({ client: pool })),
    // Kysely takes the callback pool under mysql2/promise's.
    'kysely-mysql': () => onMysql2(KyselyMySqlWriter, (pool) => new Kysely({ dialect: new MysqlDialect({ pool: pool.pool }) })),
    mariadb: () => onMariaDb(MariaDbWriter),
    'prisma-mariadb': () => onMariaDb(PrismaMariaDbWriter, (pool) => new PrismaClient({ adapter: new PrismaMariaDb(pool) })),
    'mikro-orm-mariadb': () => ({
      imports: [
        MariaDbDatabaseModule.register({
          provide: MARIADB_DB,
          useFactory: () => MikroORM.init({ driver: MariaDbDriver, clientUrl: url, entities: [LayerCreditSchema], pool: { min: 0, max: poolMax }, multipleStatements: true, allowGlobalContext: true }),
        }),
      ],
      dataLayer: new MikroOrmDataLayer({ orm: MARIADB_DB }),
      writer: MikroOrmMariaDbWriter,
    }),
    'typeorm-mariadb': () => ({
      imports: [TypeOrmModule.forRoot({ type: 'mariadb', url, multipleStatements: true, extra: { connectionLimit: poolMax } })],
      dataLayer: undefined,
      writer: TypeOrmMariaDbWriter,
    }),
  };
  return byLayer[layer]();
}
