import { jest } from '@jest/globals';
import { resolveModuleOptions } from '../idempotency.options.js';
import { IdempotencyMetricsService } from './idempotency-metrics.service.js';

describe('IdempotencyMetricsService', () => {
  let metrics: IdempotencyMetricsService;
  const grant = { consumer: 'CreditsController.grant', sender: 'default' };
  const webhook = { consumer: 'PaymentWebhooksController.onEvent', sender: 'payments' };

  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2026-12-01T12:00:00Z') });
    metrics = new IdempotencyMetricsService(resolveModuleOptions({ health: { duplicateRateWindow: '5m' } }));
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('counts deliveries per consumer and sender, by outcome', () => {
    metrics.recordDelivery(grant, 'processed');
    metrics.recordDelivery(grant, 'duplicate');
    metrics.recordDelivery(grant, 'duplicate');
    metrics.recordDelivery(webhook, 'failed');
    metrics.recordDelivery(webhook, 'rejected');
    expect(metrics.deliveries()).toEqual([
      { ...grant, processed: 1, duplicate: 2, rejected: 0, unavailable: 0, failed: 0 },
      { ...webhook, processed: 0, duplicate: 0, rejected: 1, unavailable: 0, failed: 1 },
    ]);
  });

  it("reports each sender's duplicate rate over the recent window only", () => {
    metrics.recordDelivery(webhook, 'processed');
    metrics.recordDelivery({ ...webhook, consumer: 'Other.consumer' }, 'duplicate');
    expect(metrics.duplicateRates()).toEqual([{ sender: 'payments', deliveries: 2, duplicates: 1, rate: 0.5 }]);
    jest.advanceTimersByTime(4 * 60_000);
    metrics.recordDelivery(webhook, 'duplicate');
    metrics.recordDelivery(webhook, 'duplicate');
    expect(metrics.duplicateRates()).toEqual([{ sender: 'payments', deliveries: 4, duplicates: 3, rate: 0.75 }]);
    jest.advanceTimersByTime(2 * 60_000);
    expect(metrics.duplicateRates()).toEqual([{ sender: 'payments', deliveries: 2, duplicates: 2, rate: 1 }]);
    jest.advanceTimersByTime(5 * 60_000);
    expect(metrics.duplicateRates()).toEqual([]);
    expect(metrics.deliveries()[0]).toMatchObject({ processed: 1, duplicate: 2 });
  });

  it("keeps the purge's figures; only a purged run is a success", () => {
    const startedAt = new Date();
    metrics.recordPurge({ outcome: 'purged', rows: 5000, batches: 2, startedAt, durationMs: 250 });
    metrics.recordPurge({ outcome: 'skipped', rows: 0, batches: 0, startedAt, durationMs: 1 });
    metrics.recordPurge({ outcome: 'failed', rows: 10, batches: 1, startedAt, durationMs: 3 });
    expect(metrics.purge()).toEqual({
      runs: { purged: 1, skipped: 1, failed: 1 },
      rows: 5010,
      lastRun: { outcome: 'failed', rows: 10, batches: 1, startedAt, durationMs: 3 },
      lastSuccessAt: new Date(startedAt.getTime() + 250),
    });
  });

  it('counts at most 100 sender names apart, and the rest together', () => {
    for (let i = 0; i < 150; i++) {
      metrics.recordDelivery({ consumer: 'A.b', sender: `sender-${i}` }, 'processed');
    }
    const senders = new Set(metrics.deliveries().map((counts) => counts.sender));
    expect(senders.size).toBe(101);
    expect(metrics.deliveries().find((counts) => counts.sender === '(other)')).toMatchObject({ processed: 50 });
    expect(metrics.duplicateRates()).toHaveLength(101);
  });
});
