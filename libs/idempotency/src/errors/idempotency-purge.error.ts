import { IdempotencyError } from './idempotency.error.js';

/**
 * How a purge run ended:
 * - `purged`: this instance's batches held the purge lock and deleted every expired row they found
 *   (possibly none), or deleted some until another instance's batch took the lock, which carries on;
 * - `skipped`: another instance's batch held the purge lock when this run's first batch tried it;
 *   this run did nothing;
 * - `failed`: an error ended the run; the batches committed before it stay deleted.
 */
export type PurgeOutcome = 'purged' | 'skipped' | 'failed';

/** What one purge run did. */
export interface PurgeRun {
  readonly outcome: PurgeOutcome;
  /** Expired rows deleted. */
  readonly rows: number;
  /** Batches committed, each one statement in its own short transaction. */
  readonly batches: number;
  readonly startedAt: Date;
  readonly durationMs: number;
}

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
