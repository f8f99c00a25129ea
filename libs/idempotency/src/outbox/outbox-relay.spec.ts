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
});
