import { RedisLeaseStore } from 'nestjs-idempotent-consumer';
import { leaseStoreContract } from 'nestjs-idempotent-consumer/testing';
import { createClient } from 'redis';
import { DataSource } from 'typeorm';
import { CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000, CreateProcessedMessagesTable1764633600000 } from 'nestjs-idempotent-consumer';
import { PostgresLeaseStore } from '../libs/idempotency/src/leasing/postgres-lease.store.js';
import { REDIS_URL, redisAvailable } from './support/brokers.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

const describeWithRedis = (await redisAvailable()) ? describe : describe.skip;

/** The contract of `nestjs-idempotent-consumer/testing`, run against both stores the module ships. */
describe('the lease store contract, on PostgreSQL', () => {
  let db: TestDatabase;
  let dataSource: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await new DataSource({ type: 'postgres', url: db.url, migrations: [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000], migrationsRun: true }).initialize();
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  for (const check of leaseStoreContract(() => new PostgresLeaseStore(() => dataSource, 'processed_messages'))) {
    it(check.name, check.run);
  }
});

describeWithRedis('the lease store contract, on Redis', () => {
  const client = createClient({ url: REDIS_URL });

  beforeAll(async () => {
    await client.connect();
  });

  afterAll(async () => {
    await client.close();
  });

  for (const check of leaseStoreContract(() => new RedisLeaseStore(client, `idempotency-contract-${process.pid}:`))) {
    it(check.name, check.run);
  }
});
