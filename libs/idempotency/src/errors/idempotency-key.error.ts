import { IdempotencyError } from './idempotency.error.js';

/** The message has no usable idempotency key (missing, empty, too long, control characters). HTTP 400. */
export class IdempotencyKeyError extends IdempotencyError {
  override readonly name = 'IdempotencyKeyError';

  /** @param source Where the key was looked for, e.g. `the Idempotency-Key header`. */
  constructor(
    message: string,
    readonly source: string,
  ) {
    super(message);
  }
}
