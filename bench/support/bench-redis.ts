import { createClient } from 'redis';

/** The Redis a bench run keeps its lease claims in: `REDIS_URL`, else the local default. */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The prefix of every key this run's bench processes write, so the run can delete them all at its end. */
export const REDIS_PREFIX = `idempotency-bench-${process.pid}-${Date.now().toString(36)}:`;

/** What the bench processes are given to reach the run's Redis lease store. */
export const REDIS_ENV = { BENCH_REDIS_URL: REDIS_URL, BENCH_REDIS_PREFIX: REDIS_PREFIX };

/** Fails at once when Redis does not answer at `REDIS_URL`, before any case starts an app that needs it. */
export async function checkRedis(): Promise<void> {
  const client = await createClient({ url: REDIS_URL, socket: { reconnectStrategy: false } }).connect();
  await client.close();
}

/** Deletes every key this run wrote (the lease claims kept for their retention); returns how many. */
export async function deleteRunKeys(): Promise<number> {
  const client = await createClient({ url: REDIS_URL }).connect();
  try {
    let deleted = 0;
    for await (const keys of client.scanIterator({ MATCH: `${REDIS_PREFIX}*`, COUNT: 1000 })) {
      if (keys.length > 0) {
        deleted += await client.unlink(keys);
      }
    }
    return deleted;
  } finally {
    await client.close();
  }
}

/** How the run's Redis keeps what it is told: its `appendonly`, `appendfsync` and `save` settings. */
export async function readRedisPersistence(): Promise<Record<string, string>> {
  const client = await createClient({ url: REDIS_URL }).connect();
  try {
    const settings: Record<string, string> = {};
    for (const name of ['appendonly', 'appendfsync', 'save']) {
      Object.assign(settings, await client.configGet(name));
    }
    return settings;
  } finally {
    await client.close();
  }
}
