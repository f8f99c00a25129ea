import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { StoreHandle } from '../store/store.handle.js';
import type { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import type { OutboxSchemaCheck } from './outbox-schema.check.js';
import type { IdempotencyTracing } from '../tracing/idempotency-tracing.js';
import { resolveOutbox } from './outbox.options.js';
import { OutboxRelay } from './outbox-relay.js';
import { POSTGRES_DIALECT } from '../dialects/postgres/postgres.dialect.js';

describe('OutboxRelay', () => {
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(new Logger()));

  it('shuts down at once when a connection it was opening fails after the shutdown began, instead of pausing a pollInterval first', async () => {
    let fail!: () => void;
    const failed = new Promise<never>((_, reject) => (fail = () => reject(new Error('connection refused'))));
    failed.catch(() => undefined);
    let connects = 0;
    const store = { outboxTable: 'outbox_messages', dialect: POSTGRES_DIALECT, connect: () => (connects++, failed) } as unknown as StoreHandle;
    const outbox = resolveOutbox({ publishers: { broker: { publish: async () => undefined } }, relay: { pollInterval: '1h' } });
    const schema = { passed: async () => true } as unknown as OutboxSchemaCheck;
    const relay = new OutboxRelay(outbox, store, {} as IdempotencyMetricsService, schema, {} as IdempotencyTracing);
    relay.onApplicationBootstrap();
    while (connects < 2) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    const shutdown = relay.beforeApplicationShutdown();
    fail();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still shutting down after 2 s'), 2_000)));
    expect(await Promise.race([shutdown.then(() => 'shut down'), deadline])).toBe('shut down');
    clearTimeout(timer);
  });

  it('keeps the retries of a batch that took a retry before its time by this clock, instead of losing them to that earlier time', async () => {
    // The scene of a CI run: a batch looks 1 ms before the retry it scheduled is due here, the
    // database (whose clock counts microseconds) finds it due all the same, and the batch fails it
    // again with another message. The next batch takes nothing: the relay must still look when these two are due.
    let now = 1_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    const batches: { id: string; attempts: number; lookAt: number; settleAt: number }[][] = [];
    let batch: { id: string; attempts: number; lookAt: number; settleAt: number }[] = [];
    const connection = {
      literal: (value: string) => `'${value}'`,
      begin: async () => {
        batch = batches.shift() ?? [];
        now = batch[0]?.lookAt ?? now;
        return [{ rows: batch.map(({ id, attempts }, index) => ({ seq: String(index + 1), id, destination: 'broker', address: 'orders', pattern: null, headers: {}, payload: {}, ordering_key: null, attempts, last_error: null })) }];
      },
      commit: async () => {
        now = batch[0].settleAt;
      },
      rollback: async () => [],
      close: async () => undefined,
    };
    const store = { outboxTable: 'outbox_messages', dialect: POSTGRES_DIALECT, connect: async () => connection } as unknown as StoreHandle;
    const outbox = resolveOutbox({ publishers: { broker: { publish: async () => Promise.reject(new Error('refused')) } }, relay: { autoStart: false, retryDelay: '50ms', maxAttempts: 5 } });
    const schema = { passed: async () => true } as unknown as OutboxSchemaCheck;
    const tracing = { channels: { outbox: { hasSubscribers: false } } } as unknown as IdempotencyTracing;
    const relay = new OutboxRelay(outbox, store, { recordOutboxBatch: () => undefined } as unknown as IdempotencyMetricsService, schema, tracing);
    try {
      batches.push([{ id: 'a', attempts: 0, lookAt: 1_000, settleAt: 1_005 }]);
      await relay.runOnce();
      const firstRetry = relay.stats().nextRetryAt!.getTime();
      expect(firstRetry).toBeGreaterThanOrEqual(1_055);
      batches.push([
        { id: 'a', attempts: 1, lookAt: firstRetry - 1, settleAt: 1_100 },
        { id: 'b', attempts: 0, lookAt: firstRetry - 1, settleAt: 1_100 },
      ]);
      await relay.runOnce();
      now = 1_120;
      expect(await relay.runOnce()).toEqual({ taken: 0, published: 0, failed: 0, deadLettered: 0 });
      expect(relay.stats().nextRetryAt?.getTime()).toBeGreaterThanOrEqual(1_150);
    } finally {
      jest.restoreAllMocks();
    }
  });
});
