import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { Kysely, PostgresDialect } from 'kysely';
import { IdempotencyModule, type IdempotencyModuleOptions, PgPoolDataLayer } from 'nestjs-idempotent-consumer';
import pg from 'pg';
import { LayerBenchController } from './layer-bench.controller.js';
import { DB, DrizzleWriter, KyselyWriter, PG_POOL, PgWriter, TypeOrmWriter, WRITER } from './layer-bench.writers.js';

/** The data layers the bench measures the claim on, as the contract suite runs them (`test/apps/data-layers`). */
export const BENCH_LAYERS = ['pg', 'drizzle', 'kysely', 'typeorm'] as const;
export type BenchLayer = (typeof BENCH_LAYERS)[number];

/** Connections in the app's pool, as the bench app's (`POOL_SIZE` of `bench-app.module.ts`). */
const POOL_SIZE = 20;

/** The application's own pool, ended with it. */
class OwnPool extends pg.Pool {
  onApplicationShutdown() {
    return this.end();
  }
}

/**
 * The bench app of one data layer: a service writing through its own pg Pool, Drizzle or Kysely
 * instance (the module's `PgPoolDataLayer` joins that pool to the claims) or TypeORM data source
 * (the default `TypeOrmDataLayer`). The store and `layer_credits` are created by the runner
 * before the app starts, the pool layers' store by the package's `schemaSql()`. No purge timer.
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
      typeorm: {
        imports: [TypeOrmModule.forRoot({ type: 'postgres', url: databaseUrl, extra: { max: POOL_SIZE } })],
        providers: [{ provide: WRITER, useClass: TypeOrmWriter }],
      },
    };
    const { imports, providers } = byLayer[layer];
    return {
      module: LayerBenchModule,
      imports: [...imports, IdempotencyModule.forRoot(layer === 'typeorm' ? options : { ...options, dataLayer: new PgPoolDataLayer({ pool: PG_POOL }) })],
      controllers: [LayerBenchController],
      providers,
    };
  }
}

/** Whether `name` is a layer the bench app can run on. */
export function isBenchLayer(name: string | undefined): name is BenchLayer {
  return (BENCH_LAYERS as readonly (string | undefined)[]).includes(name);
}
