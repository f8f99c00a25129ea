import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MikroORM } from '@mikro-orm/core';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '@prisma/client';
import { drizzle } from 'drizzle-orm/node-postgres';
import { Kysely, PostgresDialect } from 'kysely';
import { IdempotencyModule, type IdempotencyDataLayer, type IdempotencyModuleOptions, MikroOrmDataLayer, PgPoolDataLayer } from 'nestjs-idempotent-consumer';
import pg from 'pg';
import { LayerBenchController } from './layer-bench.controller.js';
import { DB, DrizzleWriter, KyselyWriter, LayerCreditSchema, MikroOrmWriter, PG_POOL, PgWriter, PrismaWriter, TypeOrmWriter, WRITER } from './layer-bench.writers.js';

/** The data layers the bench measures the claim on, as the contract suite runs them (`test/apps/data-layers`). */
export const BENCH_LAYERS = ['pg', 'drizzle', 'kysely', 'prisma', 'mikro-orm', 'typeorm'] as const;
export type BenchLayer = (typeof BENCH_LAYERS)[number];

/** Connections in the app's pool, as the bench app's (`POOL_SIZE` of `bench-app.module.ts`). */
const POOL_SIZE = 20;

/** The application's own pool, ended with it. */
class OwnPool extends pg.Pool {
  onApplicationShutdown() {
    return this.end();
  }
}

/** The module's data layer for `layer`: the pool layers all claim on the app's pool; TypeORM is the default. */
function dataLayerOf(layer: BenchLayer): IdempotencyDataLayer | undefined {
  if (layer === 'typeorm') return undefined;
  return layer === 'mikro-orm' ? new MikroOrmDataLayer({ orm: DB }) : new PgPoolDataLayer({ pool: PG_POOL });
}

/**
 * The bench app of one data layer: a service writing through its own pg Pool, Drizzle, Kysely or
 * Prisma instance (the module's `PgPoolDataLayer` joins that pool to the claims), MikroORM
 * instance (`MikroOrmDataLayer`, through its knex client) or TypeORM data source (the default
 * `TypeOrmDataLayer`). The store and `layer_credits` are created by the runner before the app
 * starts, by the package's `schemaSql()`. No purge timer.
 */
@Module({})
export class LayerBenchModule {
  static register(layer: BenchLayer, databaseUrl: string): DynamicModule {
    const options: IdempotencyModuleOptions = {
      retention: '7d',
      purge: { interval: false },
      // Under valgrind a pooled connection can take longer than the default 5 s to come.
      ...(process.env.BENCH_UNDER_TOOL === '1' ? { connectionTimeout: '10m' as const } : {}),
    };
    const pool: Provider = { provide: PG_POOL, useFactory: () => new OwnPool({ connectionString: databaseUrl, max: POOL_SIZE }) };
    // Under valgrind an interactive transaction of Prisma's (the plain arm's) can outlast its default
    // limits, 2 s to start and 5 s in all, and fail the request: 10 minutes there, as for the claim.
    const prismaTransactions = process.env.BENCH_UNDER_TOOL === '1' ? { transactionOptions: { maxWait: 600_000, timeout: 600_000 } } : {};
    const byLayer: Record<BenchLayer, { imports: DynamicModule[]; providers: Provider[] }> = {
      pg: { imports: [], providers: [pool, { provide: WRITER, useClass: PgWriter }] },
      drizzle: {
        imports: [],
        providers: [pool, { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => drizzle({ client }) }, { provide: WRITER, useClass: DrizzleWriter }],
      },
      kysely: {
        imports: [],
        providers: [
          pool,
          { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => new Kysely({ dialect: new PostgresDialect({ pool: client }) }) },
          { provide: WRITER, useClass: KyselyWriter },
        ],
      },
      prisma: {
        imports: [],
        providers: [
          pool,
          { provide: DB, inject: [PG_POOL], useFactory: (client: pg.Pool) => new PrismaClient({ adapter: new PrismaPg(client), ...prismaTransactions }) },
          { provide: WRITER, useClass: PrismaWriter },
        ],
      },
      'mikro-orm': {
        imports: [],
        providers: [
          { provide: DB, useFactory: () => MikroORM.init({ driver: PostgreSqlDriver, clientUrl: databaseUrl, entities: [LayerCreditSchema], pool: { min: 0, max: POOL_SIZE } }) },
          { provide: WRITER, useClass: MikroOrmWriter },
        ],
      },
      typeorm: {
        imports: [TypeOrmModule.forRoot({ type: 'postgres', url: databaseUrl, extra: { max: POOL_SIZE } })],
        providers: [{ provide: WRITER, useClass: TypeOrmWriter }],
      },
    };
    const { imports, providers } = byLayer[layer];
    return {
      module: LayerBenchModule,
      imports: [...imports, IdempotencyModule.forRoot({ ...options, dataLayer: dataLayerOf(layer) })],
      controllers: [LayerBenchController],
      providers,
    };
  }
}

/** Whether `name` is a layer the bench app can run on. */
export function isBenchLayer(name: string | undefined): name is BenchLayer {
  return (BENCH_LAYERS as readonly (string | undefined)[]).includes(name);
}
