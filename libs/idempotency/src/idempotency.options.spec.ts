import { IdempotencyOptionsError } from './errors/idempotency-options.error.js';
import { resolveModuleOptions } from './idempotency.options.js';

describe('resolveModuleOptions', () => {
  it('applies the documented defaults', () => {
    expect(resolveModuleOptions()).toEqual({
      dataSource: undefined,
      tableName: 'processed_messages',
      retentionMs: 7 * 86_400_000,
      inFlightWaitTimeoutMs: 30_000,
    });
  });

  it('keeps what is given', () => {
    expect(
      resolveModuleOptions({ dataSource: 'billing', tableName: 'seen_ids', retention: '72h', inFlightWaitTimeout: '5s' }),
    ).toEqual({ dataSource: 'billing', tableName: 'seen_ids', retentionMs: 259_200_000, inFlightWaitTimeoutMs: 5_000 });
  });

  it.each([
    [{ tableName: 'processed-messages' }, /tableName must be a plain PostgreSQL identifier/],
    [{ tableName: 'x; drop table y' }, /tableName must be a plain PostgreSQL identifier/],
    [{ dataSource: '' }, /dataSource must be a data source name/],
    [{ retention: '7 days' }, /retention must be a duration/],
    [{ inFlightWaitTimeout: '0s' }, /inFlightWaitTimeout must be a duration/],
  ])('refuses %p with a message that says how to fix it', (options, reason) => {
    expect(() => resolveModuleOptions(options as never)).toThrow(IdempotencyOptionsError);
    expect(() => resolveModuleOptions(options as never)).toThrow(reason);
  });
});
