import { IdempotencyError } from './idempotency.error.js';

/**
 * The handler tried to end or change the claim's transaction, which belongs to
 * `@IdempotentHandler()`: it called `commitTransaction()`, `rollbackTransaction()` or `release()`
 * on the claim's query runner, sent a bare `COMMIT`/`ROLLBACK`, or asked a nested transaction for
 * a stronger isolation level than the claim's. Nothing is recorded as processed. HTTP 500.
 */
export class IdempotencyClaimTransactionError extends IdempotencyError {
  override readonly name = 'IdempotencyClaimTransactionError';

  constructor(
    message: string,
    readonly consumer: string,
    readonly key: string,
  ) {
    super(message);
  }
}
