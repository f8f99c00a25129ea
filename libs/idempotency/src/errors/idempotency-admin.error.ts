import { IdempotencyError } from './idempotency.error.js';

/**
 * An `IdempotencyAdmin` action was refused: its input is incomplete (no `reason`, a bad key), it
 * would delete a live lease without `force`, or the store cannot do it. Nothing was changed.
 */
export class IdempotencyAdminError extends IdempotencyError {
  override readonly name = 'IdempotencyAdminError';

  constructor(
    message: string,
    readonly consumer: string,
    readonly key: string,
  ) {
    super(message);
  }
}
