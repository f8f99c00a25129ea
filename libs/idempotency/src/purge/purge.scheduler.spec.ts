import { jest } from '@jest/globals';
import { type PurgeOptions, resolvePurge } from './purge.options.js';
import type { IdempotencyPurgeService } from './idempotency-purge.service.js';
import type { PurgeRun } from '../errors/idempotency.errors.js';
import { PurgeScheduler } from './purge.scheduler.js';

describe('PurgeScheduler', () => {
  const run: PurgeRun = { outcome: 'purged', rows: 0, batches: 1, startedAt: new Date(), durationMs: 1 };
  let purgeNow: jest.Mock<() => Promise<PurgeRun>>;
  const scheduler = (purge: PurgeOptions) =>
    new PurgeScheduler(resolvePurge(purge), { purgeNow } as unknown as IdempotencyPurgeService);

  beforeEach(() => {
    jest.useFakeTimers();
    purgeNow = jest.fn(() => Promise.resolve(run));
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('purges one interval after bootstrap, then one interval after each run ended, until shutdown', async () => {
    const purge = scheduler({ interval: '1m' });
    await purge.onApplicationBootstrap();
    expect(purge.isScheduled).toBe(true);
    await jest.advanceTimersByTimeAsync(59_999);
    expect(purgeNow).toHaveBeenCalledTimes(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(purgeNow).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(60_000);
    expect(purgeNow).toHaveBeenCalledTimes(2);
    purge.beforeApplicationShutdown();
    expect(purge.isScheduled).toBe(false);
    await jest.advanceTimersByTimeAsync(600_000);
    expect(purgeNow).toHaveBeenCalledTimes(2);
  });

  it('keeps purging after a run failed', async () => {
    purgeNow.mockImplementationOnce(() => Promise.reject(new Error('database gone')));
    const purge = scheduler({ interval: '1s' });
    await purge.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(2_000);
    expect(purgeNow).toHaveBeenCalledTimes(2);
    purge.beforeApplicationShutdown();
  });

  it('runs no timer when the interval is false', async () => {
    const purge = scheduler({ interval: false });
    await purge.onApplicationBootstrap();
    expect(purge.isScheduled).toBe(false);
    await jest.advanceTimersByTimeAsync(3_600_000);
    expect(purgeNow).not.toHaveBeenCalled();
  });
});
