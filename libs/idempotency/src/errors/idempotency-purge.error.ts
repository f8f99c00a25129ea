import type { PurgeRun } from '../purge/purge-run.js';
import { IdempotencyError } from './idempotency.error.js';

/**
 * A purge run failed; its cause is the database's error. The batches committed before the failure
 * stay deleted and the next run carries on.
 */
export class IdempotencyPurgeError extends IdempotencyError {
  override readonly name = 'IdempotencyPurgeError';

  /** @param run What the run did before it failed. */
  constructor(
    message: string,
    readonly run: PurgeRun,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
