import { errorMessages } from './error.messages.js';
import { IdempotencyError } from './idempotency.error.js';

/** A twin of the message holds the claim and has not committed yet. HTTP 409 with `Retry-After`. */
export class IdempotencyInFlightError extends IdempotencyError {
  override readonly name = 'IdempotencyInFlightError';

  constructor(
    readonly consumer: string,
    readonly key: string,
  ) {
    super(errorMessages.inFlight(key));
  }
}
