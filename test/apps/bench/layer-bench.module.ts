import { type DynamicModule, Module } from '@nestjs/common';
import { IdempotencyModule } from 'nestjs-idempotent-consumer';
import { dataLayerOf, layerDatabase } from '../data-layers/layer-app.module.js';
import { MARIADB_LAYERS, type MariaDbLayerName } from '../data-layers/layers.js';
import { mariaDbLayerDatabase } from '../data-layers/mariadb-layer-app.module.js';
import { LayerBenchController, WRITER } from './layer-bench.controller.js';

/** The data layers the bench measures the claim on, as the contract suite runs them (`test/apps/data-layers`). */
export const BENCH_LAYERS = ['pg', 'drizzle', 'kysely', 'prisma', 'mikro-orm', 'typeorm'] as const;
export type PostgresBenchLayer = (typeof BENCH_LAYERS)[number];
/** A layer on PostgreSQL (case 17) or on MariaDB (case 20). */
export type BenchLayer = PostgresBenchLayer | MariaDbLayerName;

/** Connections in the app's pool, as the bench app's (`POOL_SIZE` of `bench-app.module.ts`). */
const POOL_SIZE = 20;

/**
 * The bench app of one data layer: a service writing through its own pg Pool, Drizzle, Kysely or
 * Prisma instance (the module's `PgPoolDataLayer` joins that pool to the claims), MikroORM
 * instance (`MikroOrmDataLayer`, through its knex client) or TypeORM data source (the default
 * `TypeOrmDataLayer`), with the contract suite's database and writers (`layerDatabase`); or one of
 * the layers on MariaDB (`mariaDbLayerDatabase`). The store and `layer_credits` are created by the
 * runner before the app starts, by the package's SQL. No purge timer.
 */
@Module({})
export class LayerBenchModule {
  static register(layer: BenchLayer, databaseUrl: string): DynamicModule {
    const underTool = process.env.BENCH_UNDER_TOOL === '1';
    const module = { retention: '7d' as const, purge: { interval: false as const }, ...(underTool ? { connectionTimeout: '10m' as const } : {}) };
    if (isMariaDbLayer(layer)) {
      const { imports, dataLayer, writer } = mariaDbLayerDatabase(layer, databaseUrl, POOL_SIZE);
      return {
        module: LayerBenchModule,
        imports: [...imports, IdempotencyModule.forRoot({ ...module, dataLayer })],
        controllers: [LayerBenchController],
        providers: [{ provide: WRITER, useClass: writer }],
      };
    }
    // Under valgrind an interactive transaction of Prisma's (the plain arm's) can outlast its default
    // limits, 2 s to start and 5 s in all, and fail the request: 10 minutes there, as for the claim.
    const { imports, providers, writer } = layerDatabase(layer, databaseUrl, POOL_SIZE, underTool ? { transactionOptions: { maxWait: 600_000, timeout: 600_000 } } : {});
    return {
      module: LayerBenchModule,
      imports: [
        ...imports,
        // Under valgrind a pooled connection can take longer than the default 5 s to come.
        IdempotencyModule.forRoot({ ...module, dataLayer: dataLayerOf(layer) }),
      ],
      controllers: [LayerBenchController],
      providers: [...providers, { provide: WRITER, useClass: writer }],
    };
  }
}

/** Whether `name` is a layer the bench app can run on. */
export function isBenchLayer(name: string | undefined): name is BenchLayer {
  return (BENCH_LAYERS as readonly (string | undefined)[]).includes(name) || isMariaDbLayer(name);
}

/** Whether `name` is one of the layers on MariaDB. */
export function isMariaDbLayer(name: string | undefined): name is MariaDbLayerName {
  return (MARIADB_LAYERS as readonly (string | undefined)[]).includes(name);
}
