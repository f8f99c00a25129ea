import { RedisLeaseStore } from 'nestjs-idempotent-consumer';
import { createClient } from 'redis';

/** The Redis lease store of a bench process, on BENCH_REDIS_URL under the run's BENCH_REDIS_PREFIX; `close` disconnects it. */
export async function connectRedisLeaseStore(): Promise<{ store: RedisLeaseStore; close(): Promise<void> }> {
  const url = process.env.BENCH_REDIS_URL;
  const prefix = process.env.BENCH_REDIS_PREFIX;
  if (!url || !prefix) {
    throw new Error('BENCH_REDIS_URL and BENCH_REDIS_PREFIX are set by the bench runner (npm run bench)');
  }
  const client = await createClient({ url }).connect();
  return { store: new RedisLeaseStore(client, prefix), close: () => client.close() };
}
