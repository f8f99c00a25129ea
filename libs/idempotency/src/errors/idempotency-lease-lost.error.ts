import { messages } from '../idempotency.messages.js';
import { IdempotencyError } from './idempotency.error.js';

/**
 * Lease mode: the handler's lease expired and another delivery took the message over, so this
 * holder can no longer complete (or extend) it: its result is not recorded. HTTP 409 with
 * `Retry-After` (the retry gets the answer of the holder that took over); RabbitMQ: retried.
 */
export class IdempotencyLeaseLostError extends IdempotencyError {
  override readonly name = 'IdempotencyLeaseLostError';

  constructor(
    readonly consumer: string,
    readonly key: string,
  ) {
    super(messages.leaseLost(consumer, key));
  }
}
