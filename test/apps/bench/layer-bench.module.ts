import { type DynamicModule, Module } from '@nestjs/common';
import { IdempotencyModule } from 'nestjs-idempotent-consumer';
import { dataLayerOf, layerDatabase } from '../data-layers/layer-app.module.js';
import { LayerBenchController, WRITER } from './layer-bench.controller.js';

/** The data layers the bench measures the claim on, as the contract suite runs them (`test/apps/data-layers`). */
export const BENCH_LAYERS = ['pg', 'drizzle', 'kysely', 'prisma', 'mikro-orm', 'typeorm'] as const;
export type BenchLayer = (typeof BENCH_LAYERS)[number];

/** Connections in the app's pool, as the bench app's (`POOL_SIZE` of `bench-app.module.ts`). */
const POOL_SIZE = 20;

/**
 * The bench app of one data layer: a service writing through its own pg Pool, Drizzle, Kysely or
 * Prisma instance (the module's `PgPoolDataLayer` joins that pool to the claims), MikroORM
 * instance (`MikroOrmDataLayer`, through its knex client) or TypeORM data source (the default
 * `TypeOrmDataLayer`), with the contract suite's database and writers (`layerDatabase`). The store
 * and `layer_credits` are created by the runner before the app starts, by the package's
 * `schemaSql()`. No purge timer.
 */
@Module({})
export class LayerBenchModule {
  static register(layer: BenchLayer, databaseUrl: string): DynamicModule {
    const underTool = process.env.BENCH_UNDER_TOOL === '1';
    // Under valgrind an interactive transaction of Prisma's (the plain arm's) can outlast its default
    // limits, 2 s to start and 5 s in all, and fail the request: 10 minutes there, as for the claim.
    const { imports, providers, writer } = layerDatabase(layer, databaseUrl, POOL_SIZE, underTool ? { transactionOptions: { maxWait: 600_000, timeout: 600_000 } } : {});
    return {
      module: LayerBenchModule,
      imports: [
        ...imports,
        IdempotencyModule.forRoot({
          retention: '7d',
          purge: { interval: false },
          // Under valgrind a pooled connection can take longer than the default 5 s to come.
          ...(underTool ? { connectionTimeout: '10m' as const } : {}),
          dataLayer: dataLayerOf(layer),
        }),
      ],
      controllers: [LayerBenchController],
      providers: [...providers, { provide: WRITER, useClass: writer }],
    };
  }
}

/** Whether `name` is a layer the bench app can run on. */
export function isBenchLayer(name: string | undefined): name is BenchLayer {
  return (BENCH_LAYERS as readonly (string | undefined)[]).includes(name);
}
