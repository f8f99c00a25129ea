import { resolve } from 'node:path';
import { mariaDbOutboxSql, mariaDbSchemaSql } from 'nestjs-idempotent-consumer';
import { type DataLayerHarness, dataLayerContract } from 'nestjs-idempotent-consumer/testing';
import type { MariaDbLayerName } from '../apps/data-layers/layers.js';
import type { DemoProcess } from './demo-process.js';
import { layerServices } from './layer-service.js';
import { createMariaDbDatabase, type MariaDbDatabase } from './mariadb-database.js';

/** The service on one data layer on MariaDB, built by `npm run build:test-apps` (`npm test` does). */
const LAYER_APP = resolve('dist/test-apps/test/apps/data-layers/mariadb-layer-app.main.js');

/**
 * `dataLayerContract()` on data layers on MariaDB, as on PostgreSQL's (data-layers): the service
 * writes through its own mysql2 pool (plain, Drizzle, Kysely), pool of the mariadb connector (plain,
 * Prisma), MikroORM or TypeORM `mariadb` data source, the store and the outbox are made by the
 * package's SQL for MariaDB, and the effects are counted in MariaDB. Two suite files call it:
 * data-layers.typeorm-mariadb (TypeORM's data source, which CI's pass on TypeORM 0.3 runs again) and
 * data-layers.mariadb (the layers that never call TypeORM).
 */
export function describeMariaDbLayers(layers: readonly MariaDbLayerName[]): void {
  describe.each(layers)('the %s data layer on MariaDB', (layer) => {
    let mariadb: MariaDbDatabase;
    let app: DemoProcess;
    const services = layerServices(LAYER_APP, '/announced', () => ({ DATABASE_URL: mariadb.url, LAYER: layer }));
    const harness: DataLayerHarness = {
      database: 'mariadb',
      service: () => services.asService(app),
      start: async (options) => services.asService(await services.start(options)),
      query: async <T>(sql: string, params?: unknown[]) => (await mariadb.pool.query(sql, params))[0] as T[],
      block: async (gate) => {
        const connection = await mariadb.pool.getConnection();
        await connection.query('START TRANSACTION');
        await connection.query('SELECT name FROM gates WHERE name = ? FOR UPDATE', [gate]);
        return async () => {
          await connection.query('ROLLBACK');
          connection.release();
        };
      },
    };

    beforeAll(async () => {
      mariadb = await createMariaDbDatabase('idempotency_layers', [mariaDbSchemaSql(), ...mariaDbOutboxSql().split(';\n').filter((statement) => statement.trim())]);
      app = await services.start();
    });

    afterAll(async () => {
      await services.killAll();
      await mariadb?.drop();
    });

    describe('dataLayerContract()', () => {
      for (const check of dataLayerContract(harness)) {
        it(check.name, check.run);
      }
    });
  });
}
