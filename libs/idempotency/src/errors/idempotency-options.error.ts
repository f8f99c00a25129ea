import { IdempotencyError } from './idempotency.error.js';

/** Thrown at start-up when the module's or a handler's options cannot work. */
export class IdempotencyOptionsError extends IdempotencyError {
  override readonly name = 'IdempotencyOptionsError';
}
