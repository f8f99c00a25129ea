import { RedisLeaseStore } from 'nestjs-idempotent-consumer';
import { leaseStoreContract } from 'nestjs-idempotent-consumer/testing';
import { createClient } from 'redis';
import { REDIS_URL, redisAvailable } from './support/brokers.js';

const describeWithRedis = (await redisAvailable()) ? describe : describe.skip;

/** The contract of `nestjs-idempotent-consumer/testing`, run against the Redis store the module ships (the PostgreSQL one's run sits beside its source). */
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
