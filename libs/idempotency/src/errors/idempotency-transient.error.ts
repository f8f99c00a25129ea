import { IdempotencyError } from './idempotency.error.js';

/**
 * The database rolled the transaction back for a reason a retry cures (serialization failure,
 * deadlock, a claim purged while being read). Nothing was committed. HTTP 503 with `Retry-After`.
 */
export class IdempotencyTransientError extends IdempotencyError {
  override readonly name = 'IdempotencyTransientError';

  constructor(
    message: string,
    readonly consumer: string,
    readonly key: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
