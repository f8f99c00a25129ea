import { errorMessages } from './error.messages.js';
import { IdempotencyError } from './idempotency.error.js';

/** The key was processed before with a different payload. HTTP 422. */
export class IdempotencyKeyReusedError extends IdempotencyError {
  override readonly name = 'IdempotencyKeyReusedError';

  constructor(
    readonly consumer: string,
    readonly key: string,
  ) {
    super(errorMessages.keyReused(key));
  }
}
