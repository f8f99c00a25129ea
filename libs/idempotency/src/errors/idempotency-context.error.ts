import { messages } from '../idempotency.messages.js';
import { IdempotencyError } from './idempotency.error.js';

/** Thrown when `IdempotencyContext` is read outside an `@IdempotentHandler()`. */
export class IdempotencyContextError extends IdempotencyError {
  override readonly name = 'IdempotencyContextError';

  constructor() {
    super(messages.noActiveClaim());
  }
}
