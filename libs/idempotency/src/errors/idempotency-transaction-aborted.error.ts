import { errorMessages } from './error.messages.js';
import { IdempotencyError } from './idempotency.error.js';

/**
 * PostgreSQL aborted the claim's transaction: a statement of the handler failed and the handler
 * carried on (it caught the error), so COMMIT could only roll back. Nothing was committed, the
 * claim included; the delivery fails (HTTP 500; RabbitMQ: retried). Wrap statements that may
 * fail in `manager.transaction(...)`, a savepoint, to carry on after their failure.
 */
export class IdempotencyTransactionAbortedError extends IdempotencyError {
  override readonly name = 'IdempotencyTransactionAbortedError';

  constructor(
    readonly consumer: string,
    readonly key: string,
    options?: ErrorOptions,
  ) {
    super(errorMessages.transactionAborted(consumer, key), options);
  }
}
