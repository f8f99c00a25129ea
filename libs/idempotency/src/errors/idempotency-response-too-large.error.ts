import { errorMessages } from './error.messages.js';
import { IdempotencyError } from './idempotency.error.js';

/**
 * The handler's response body is larger than the module's `replay.maxBodyBytes`, so it cannot be
 * recorded for its duplicates. The claim and the work are rolled back and the request is
 * answered 500: raise the limit, or answer with less (an id and a link to the content).
 */
export class IdempotencyResponseTooLargeError extends IdempotencyError {
  override readonly name = 'IdempotencyResponseTooLargeError';

  constructor(
    readonly consumer: string,
    readonly key: string,
    readonly maxBodyBytes: number,
  ) {
    super(errorMessages.responseTooLarge(consumer, key, maxBodyBytes));
  }
}
