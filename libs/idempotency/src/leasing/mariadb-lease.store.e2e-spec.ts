import { AsyncLocalStorage } from 'node:async_hooks';
import { createMariaDbDatabase, type MariaDbDatabase } from '../../../../test/support/mariadb-database.js';
import type { DataLayerHost } from '../data-layers/data-layer.js';
import { Mysql2PoolDataLayer } from '../data-layers/mysql2/mysql2-pool.data-layer.js';
import { mariaDbSchemaSql } from '../migrations/mariadb-schema-sql.js';
import { leaseStoreContract } from '../testing/lease-store.contract.js';
import { MariaDbLeaseStore } from './mariadb-lease.store.js';

/** The contract of `nestjs-idempotent-consumer/testing`, run against the store on MariaDB's processed-messages table, through `Mysql2PoolDataLayer`. */
describe('the lease store contract, on MariaDB', () => {
  let mariadb: MariaDbDatabase;
  let layer: Mysql2PoolDataLayer;

  beforeAll(async () => {
    mariadb = await createMariaDbDatabase('idempotency_lease', [mariaDbSchemaSql()]);
    layer = new Mysql2PoolDataLayer({ pool: mariadb.pool });
    layer.attach({ storage: new AsyncLocalStorage() } as unknown as DataLayerHost);
    await layer.start();
  });

  afterAll(() => mariadb?.drop());

  for (const check of leaseStoreContract(() => new MariaDbLeaseStore(layer, 'processed_messages'))) {
    it(check.name, check.run);
  }
});
