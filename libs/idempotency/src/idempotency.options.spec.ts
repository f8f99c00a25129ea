import { IdempotencyOptionsError } from './errors/idempotency-options.error.js';
import { resolveModuleOptions } from './idempotency.options.js';

describe('resolveModuleOptions', () => {
  it('applies the documented defaults', () => {
    expect(resolveModuleOptions()).toEqual({
      dataSource: undefined,
      tableName: 'processed_messages',
      retentionMs: 7 * 86_400_000,
      inFlightWaitTimeoutMs: 30_000,
      senderHorizonsMs: {},
      purge: { intervalMs: 60_000, batchSize: 5000 },
      health: {
        maxPurgeLagMs: 3_600_000,
        maxTimeSincePurgeMs: 600_000,
        maxDuplicateRate: 0.5,
        duplicateRateWindowMs: 300_000,
        duplicateRateMinDeliveries: 20,
        maxEstimatedRows: null,
      },
    });
  });

  it('keeps what is given', () => {
    expect(
      resolveModuleOptions({ dataSource: 'billing', tableName: 'seen_ids', retention: '72h', inFlightWaitTimeout: '5s' }),
    ).toMatchObject({ dataSource: 'billing', tableName: 'seen_ids', retentionMs: 259_200_000, inFlightWaitTimeoutMs: 5_000 });
  });

  it('keeps the senders, purge and health options that are given', () => {
    const resolved = resolveModuleOptions({
      senders: { payments: { redeliveryHorizon: '3d' }, shop: { redeliveryHorizon: '4h' } },
      purge: { interval: '30s', batchSize: 1000 },
      health: {
        maxPurgeLag: '2h',
        maxTimeSincePurge: '5m',
        maxDuplicateRate: 0.05,
        duplicateRateWindow: '1m',
        duplicateRateMinDeliveries: 100,
        maxEstimatedRows: 50_000_000,
      },
    });
    expect(resolved.senderHorizonsMs).toEqual({ payments: 259_200_000, shop: 14_400_000 });
    expect(resolved.purge).toEqual({ intervalMs: 30_000, batchSize: 1000 });
    expect(resolved.health).toEqual({
      maxPurgeLagMs: 7_200_000,
      maxTimeSincePurgeMs: 300_000,
      maxDuplicateRate: 0.05,
      duplicateRateWindowMs: 60_000,
      duplicateRateMinDeliveries: 100,
      maxEstimatedRows: 50_000_000,
    });
  });

  it('with the purge timer off, does not check the time since the last purge', () => {
    const resolved = resolveModuleOptions({ purge: { interval: false }, health: { maxTimeSincePurge: '1s' } });
    expect(resolved.purge.intervalMs).toBeNull();
    expect(resolved.health.maxTimeSincePurgeMs).toBeNull();
  });

  it.each([
    [{ tableName: 'processed-messages' }, /tableName must be a plain PostgreSQL identifier/],
    [{ tableName: 'x; drop table y' }, /tableName must be a plain PostgreSQL identifier/],
    [{ dataSource: '' }, /dataSource must be a data source name/],
    [{ retention: '7 days' }, /retention must be a duration/],
    [{ inFlightWaitTimeout: '0s' }, /inFlightWaitTimeout must be a duration/],
    [{ senders: { payments: {} } }, /senders\.payments\.redeliveryHorizon must be a duration/],
    [{ senders: ['payments'] }, /senders must map sender names to \{ redeliveryHorizon \}/],
    [{ purge: { interval: 'often' } }, /purge\.interval must be a duration/],
    [{ purge: { batchSize: 0 } }, /purge\.batchSize must be a whole number from 1 to 100000/],
    [{ purge: { batchSize: 2.5 } }, /purge\.batchSize must be a whole number/],
    [{ health: { maxDuplicateRate: 5 } }, /health\.maxDuplicateRate must be a share from 0 to 1/],
    [{ health: { duplicateRateMinDeliveries: 0 } }, /health\.duplicateRateMinDeliveries must be a whole number above 0/],
    [{ health: { maxEstimatedRows: -1 } }, /health\.maxEstimatedRows must be a whole number above 0/],
    [
      { purge: { interval: '2h' } },
      /health\.maxPurgeLag \(1h\) must be longer than purge\.interval \(2h\).*raise health\.maxPurgeLag or shorten purge\.interval/,
    ],
    [{ purge: { interval: '10m' }, health: { maxPurgeLag: '1h' } }, /health\.maxTimeSincePurge \(10m\) must be longer than purge\.interval \(10m\)/],
  ])('refuses %p with a message that says how to fix it', (options, reason) => {
    expect(() => resolveModuleOptions(options as never)).toThrow(IdempotencyOptionsError);
    expect(() => resolveModuleOptions(options as never)).toThrow(reason);
  });
});
