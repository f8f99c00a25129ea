import pg from 'pg';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/test-database.js';
import { CreateProcessedMessagesFunctions1796256000000 } from '../migrations/create-processed-messages-functions.migration.js';
import { CreateProcessedMessagesTable1764633600000 } from '../migrations/create-processed-messages-table.migration.js';
import { UpgradeProcessedMessagesTable1796342400000 } from '../migrations/upgrade-processed-messages-table.migration.js';
import { leaseStoreContract } from '../testing/lease-store.contract.js';
import { PostgresLeaseStore } from './postgres-lease.store.js';

/** The contract of `nestjs-idempotent-consumer/testing`, run against the store on the processed-messages table. */
describe('the lease store contract, on PostgreSQL', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await new DataSource({
      type: 'postgres',
      url: db.url,
      migrations: [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000],
      migrationsRun: true,
    }).initialize();
    pool = new pg.Pool({ connectionString: db.url });
    // pool.end() resolves before its idle backends have exited; the database's drop then terminates them, which the pool reports as an error.
    pool.on('error', () => undefined);
  });

  afterAll(async () => {
    await pool?.end();
    await dataSource?.destroy();
    await db?.drop();
  });

  const join = {
    query: async <Row>(text: string, parameters?: readonly unknown[]) => {
      const result = await pool.query(text, parameters as unknown[]);
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
    },
  };
  for (const check of leaseStoreContract(() => new PostgresLeaseStore(join, 'processed_messages'))) {
    it(check.name, check.run);
  }
});
