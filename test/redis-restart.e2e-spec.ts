import type { INestApplication } from '@nestjs/common';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisLeaseStore } from 'nestjs-idempotent-consumer';
import { createClient, type RedisClientType } from 'redis';
import { LeaseShapesController, LeaseShapesModule, PROVIDER } from './fixtures/lease-shapes.module.js';
import { post, startDemoApp } from './support/demo-app.js';
import { PaymentProvider } from './support/payment-provider.js';
import { type RedisPersistence, RedisServer } from './support/redis-server.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

const KEYS = 600;
const KILL_AFTER = 300;
const CONCURRENCY = 8;

function redisServerInstalled(): boolean {
  try {
    execFileSync('redis-server', ['--version']);
    return true;
  } catch (error) {
    if (process.env.CI === 'true') {
      throw new Error('redis-server is not installed; CI=true requires it', { cause: error });
    }
    console.warn('\n*** SKIPPING the Redis restart suite: redis-server is not installed. ***\n');
    return false;
  }
}

/**
 * What the Redis store forgets when Redis crashes and starts again mid-run: a load of deliveries,
 * a SIGKILL of a private redis-server after half of them were answered, its restart on the same
 * data, then every message delivered again. A message answered before the crash whose handler runs
 * again is a duplicate that got through.
 */
(redisServerInstalled() ? describe : describe.skip)('the Redis lease store across a crash of Redis', () => {
  let db: TestDatabase;
  const provider = new PaymentProvider();
  const through: Partial<Record<RedisPersistence, number>> = {};

  beforeAll(async () => {
    db = await createTestDatabase();
    await provider.start();
    PROVIDER.url = provider.url;
  });

  afterAll(async () => {
    console.log(
      `Redis crash mid-run, ${KILL_AFTER} of ${KEYS} messages answered before it: duplicates that got through ` +
        `without persistence ${through.none}, with appendonly everysec ${through['appendonly-everysec']}`,
    );
    await provider.close();
    await db?.drop();
  });

  it.each<RedisPersistence>(['none', 'appendonly-everysec'])('with persistence %s', async (persistence) => {
    const dir = await mkdtemp(join(tmpdir(), 'idempotency-redis-'));
    const redisServer = new RedisServer(persistence, dir);
    await redisServer.start();
    const redis = createClient({ url: redisServer.url }) as RedisClientType;
    redis.on('error', () => undefined);
    await redis.connect();
    let app: INestApplication | undefined;
    try {
      let baseUrl: string;
      ({ app, baseUrl } = await startDemoApp('express', db.url, [LeaseShapesModule], false, {
        purge: { interval: false },
        // What the store remembers is measured: this process's replay cache would answer the
        // messages it completed itself (for up to its maxAge) whatever Redis lost.
        replayCache: false,
        stores: { redis: new RedisLeaseStore(redis, `restart-${persistence}:`) },
      }));
      const order = (i: number) => `restart-${persistence}-${i}`;
      /** Delivers `order` until it is answered 2xx, as a client retrying a 503 or 409 would. */
      const deliver = async (key: string) => {
        for (;;) {
          const answer = await post(`${baseUrl}/charges/redis/${key}`, { cents: 1 }, { 'Idempotency-Key': key });
          if (answer.status < 300) return;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      const answeredBeforeCrash = new Set<string>();
      let next = 0;
      let crashed = false;
      let crash: Promise<void> | undefined;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < KEYS) {
            const key = order(next++);
            await deliver(key);
            if (!crashed) {
              answeredBeforeCrash.add(key);
              if (answeredBeforeCrash.size === KILL_AFTER) {
                crashed = true;
                crash = redisServer.kill().then(() => redisServer.start());
              }
            }
          }
        }),
      );
      await crash;
      const runs = app.get(LeaseShapesController).runs;
      const before = new Map([...answeredBeforeCrash].map((key) => [key, runs.get(key) ?? 0]));
      for (let i = 0; i < KEYS; i++) {
        await deliver(order(i));
      }
      through[persistence] = [...before].filter(([key, count]) => (runs.get(key) ?? 0) > count).length;
      // Messages answered after the restart are never processed twice.
      const after = Array.from({ length: KEYS }, (_, i) => order(i)).filter((key) => !answeredBeforeCrash.has(key));
      expect(after.filter((key) => (runs.get(key) ?? 0) > 1).length).toBeLessThanOrEqual(CONCURRENCY);
      if (persistence === 'none') {
        expect(through.none).toBe(KILL_AFTER);
      } else {
        expect(through['appendonly-everysec']).toBeLessThan(KILL_AFTER);
      }
    } finally {
      await app?.close();
      await redis.close().catch(() => undefined);
      await redisServer.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
