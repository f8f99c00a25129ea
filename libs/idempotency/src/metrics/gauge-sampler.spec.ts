import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { StoreSchemaCheck } from '../discovery/store-schema.check.js';
import type { StoreHandle } from '../store/store.handle.js';
import type { StoreFigures } from '../dialects/store-dialect.js';
import type { IdempotencyMetricsService, StoreSample } from './idempotency-metrics.service.js';
import type { PrometheusExporter } from './prometheus.exporter.js';
import { StoreSampler } from './store.sampler.js';

describe('GaugeSampler (through StoreSampler)', () => {
  const statistics: StoreFigures = { estimatedRows: 10, totalBytes: 8192, lagMs: null, oldestAgeMs: 5 };
  let read: jest.Mock<() => Promise<StoreFigures>>;
  let samples: StoreSample[];
  let warnings: string[];
  const sampler = (passed: boolean, registered = true) =>
    new StoreSampler(
      { table: 'processed_messages', statistics: read } as unknown as StoreHandle,
      { recordStoreSample: (sample: StoreSample) => samples.push(sample) } as unknown as IdempotencyMetricsService,
      { isRegistered: registered } as PrometheusExporter,
      { storeSampleIntervalMs: 1_000 } as never,
      { passed: async () => passed } as unknown as StoreSchemaCheck,
    );

  beforeEach(() => {
    jest.useFakeTimers();
    read = jest.fn(async () => statistics);
    samples = [];
    warnings = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
  });

  afterEach(() => {
    jest.restoreAllMocks();
    jest.useRealTimers();
  });

  it('samples at bootstrap, then one interval after each sample, until shutdown', async () => {
    const store = sampler(true);
    await store.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(0);
    expect(samples).toHaveLength(1);
    expect(samples[0]).toMatchObject({ estimatedRows: 10, totalBytes: 8192, purgeLagMs: 0, oldestRowAgeMs: 5 });
    await jest.advanceTimersByTimeAsync(2_000);
    expect(samples).toHaveLength(3);
    store.beforeApplicationShutdown();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(samples).toHaveLength(3);
  });

  it('logs a failed sample, keeps the last one and samples again an interval later', async () => {
    read.mockImplementationOnce(() => Promise.reject(new Error('connection refused')));
    const store = sampler(true);
    await store.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(0);
    expect(samples).toHaveLength(0);
    expect(warnings).toEqual([expect.stringContaining('connection refused')]);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(samples).toHaveLength(1);
    store.beforeApplicationShutdown();
  });

  it('takes no sample when the schema check failed, or without a registry', async () => {
    for (const store of [sampler(false), sampler(true, false)]) {
      await store.onApplicationBootstrap();
      expect(store.isScheduled).toBe(false);
    }
    await jest.advanceTimersByTimeAsync(10_000);
    expect(read).not.toHaveBeenCalled();
  });

  it('starts nothing when the shutdown began while it waited for the schema check', async () => {
    let pass!: (passed: boolean) => void;
    const store = new StoreSampler(
      { table: 'processed_messages', statistics: read } as unknown as StoreHandle,
      {} as IdempotencyMetricsService,
      { isRegistered: true } as PrometheusExporter,
      { storeSampleIntervalMs: 1_000 } as never,
      { passed: () => new Promise<boolean>((resolve) => (pass = resolve)) } as unknown as StoreSchemaCheck,
    );
    const bootstrap = store.onApplicationBootstrap();
    store.beforeApplicationShutdown();
    pass(true);
    await bootstrap;
    await jest.advanceTimersByTimeAsync(10_000);
    expect(read).not.toHaveBeenCalled();
  });
});
