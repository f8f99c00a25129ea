import { Reflector } from '@nestjs/core';
import { IdempotencyOptionsError } from '../errors/idempotency-options.error.js';
import { resolveModuleOptions } from '../idempotency.options.js';
import { IdempotencyMetadataAccessor } from './idempotency-metadata.accessor.js';
import { IdempotentHandler } from './idempotent-handler.decorator.js';

class PaymentsController {
  @IdempotentHandler()
  plain() {}

  @IdempotentHandler({ consumer: 'ledger', sender: 'stripe', retention: '72h', inFlight: 'wait', maxAttempts: 2, key: { body: 'id' } })
  configured() {}

  @IdempotentHandler({ retention: 'forever' as never })
  badRetention() {}

  @IdempotentHandler({ maxAttempts: 0 })
  badAttempts() {}
}

describe('IdempotencyMetadataAccessor', () => {
  const accessor = new IdempotencyMetadataAccessor(new Reflector(), resolveModuleOptions({ retention: '7d' }));
  const resolve = (method: keyof PaymentsController) => accessor.resolveFor(PaymentsController, PaymentsController.prototype[method]);

  it('defaults the consumer to class and method, and the rest to the module', () => {
    expect(resolve('plain')).toEqual({
      consumer: 'PaymentsController.plain',
      key: undefined,
      sender: 'default',
      retentionMs: 7 * 86_400_000,
      inFlight: undefined,
      maxAttempts: 5,
    });
  });

  it('keeps what the decorator says', () => {
    expect(resolve('configured')).toEqual({
      consumer: 'ledger',
      key: { body: 'id' },
      sender: 'stripe',
      retentionMs: 72 * 3_600_000,
      inFlight: 'wait',
      maxAttempts: 2,
    });
  });

  it('refuses bad handler options, naming the handler', () => {
    expect(() => resolve('badRetention')).toThrow(IdempotencyOptionsError);
    expect(() => resolve('badRetention')).toThrow(/retention of PaymentsController.badRetention must be a duration/);
    expect(() => resolve('badAttempts')).toThrow(/maxAttempts of PaymentsController.badAttempts must be a whole number/);
  });

  it('answers undefined for a method without the decorator', () => {
    expect(accessor.getOptions(function notDecorated() {})).toBeUndefined();
  });
});
