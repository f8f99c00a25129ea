import { errorMessages } from './error.messages.js';
import { IdempotencyError } from './idempotency.error.js';

/**
 * Thrown when `IdempotencyContext` is read outside an `@IdempotentHandler()`, or for what the
 * handler's mode does not have (a claim transaction in lease mode, a lease in the transactional mode).
 */
export class IdempotencyContextError extends IdempotencyError {
  override readonly name = 'IdempotencyContextError';

  constructor(message = errorMessages.noActiveClaim()) {
    super(message);
  }
}
