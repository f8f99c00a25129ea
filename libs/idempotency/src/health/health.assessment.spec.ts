import { resolveModuleOptions } from '../idempotency.options.js';
import { findProblems, type HealthFigures } from './health.assessment.js';

describe('findProblems', () => {
  const thresholds = resolveModuleOptions({
    health: { maxPurgeLag: '1h', maxTimeSincePurge: '10m', maxDuplicateRate: 0.2, duplicateRateMinDeliveries: 10, maxEstimatedRows: 1000, maxOutboxLag: '1m', maxOutboxDeadLetters: 1 },
  }).health;
  const healthy: HealthFigures = {
    estimatedRows: 1000,
    purgeLagMs: 3_600_000,
    timeSincePurgeMs: 600_000,
    duplicateRates: [{ sender: 'payments', deliveries: 10, duplicates: 2, rate: 0.2 }],
    outbox: { lagMs: 60_000, deadLetters: 1 },
  };

  it('finds nothing while every figure is at or under its threshold', () => {
    expect(findProblems(healthy, thresholds)).toEqual([]);
  });

  it('names each crossed threshold with the figure and the option', () => {
    expect(
      findProblems(
        {
          estimatedRows: 1001,
          purgeLagMs: 7_200_000,
          timeSincePurgeMs: 900_000,
          duplicateRates: [{ sender: 'payments', deliveries: 10, duplicates: 3, rate: 0.3 }],
          outbox: { lagMs: 61_000, deadLetters: 2 },
        },
        thresholds,
      ),
    ).toEqual([
      'The store holds about 1001 message ids, more than health.maxEstimatedRows (1000).',
      'The oldest expired message id expired 7200s ago and is not purged yet, longer than health.maxPurgeLag (1h).',
      "This instance's last successful purge (or its start) was 900s ago, longer than health.maxTimeSincePurge (10m).",
      "3 of 10 deliveries from 'payments' in the last 5m were duplicates (30%), more than health.maxDuplicateRate (20%).",
      'The oldest outbox message not dispatched yet was written 61s ago, longer than health.maxOutboxLag (1m): is a relay running, and does the broker accept its messages?',
      '2 outbox messages are parked as dead letters, more than health.maxOutboxDeadLetters (1): requeue or discard them with IdempotencyAdmin.',
    ]);
  });

  it('ignores the duplicate rate of a sender with too few deliveries to mean anything', () => {
    const figures = { ...healthy, duplicateRates: [{ sender: 'payments', deliveries: 9, duplicates: 9, rate: 1 }] };
    expect(findProblems(figures, thresholds)).toEqual([]);
  });

  it('checks neither an unknown size nor the time since a purge that is off', () => {
    const figures = { ...healthy, estimatedRows: null, timeSincePurgeMs: null, outbox: null };
    const unlimited = { ...thresholds, maxEstimatedRows: null, maxTimeSincePurgeMs: null };
    expect(findProblems({ ...figures, estimatedRows: 10 ** 9 }, unlimited)).toEqual([]);
    expect(findProblems(figures, thresholds)).toEqual([]);
  });
});
