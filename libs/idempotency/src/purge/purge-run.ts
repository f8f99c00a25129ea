/**
 * How a purge run ended:
 * - `purged`: this instance held the purge lock and deleted every expired row it found (possibly none);
 * - `skipped`: another instance of the cluster was purging; this one did nothing;
 * - `failed`: an error ended the run; the batches committed before it stay deleted.
 */
export type PurgeOutcome = 'purged' | 'skipped' | 'failed';

/** What one purge run did. */
export interface PurgeRun {
  readonly outcome: PurgeOutcome;
  /** Expired rows deleted. */
  readonly rows: number;
  /** Batches committed, each its own short transaction. */
  readonly batches: number;
  readonly startedAt: Date;
  readonly durationMs: number;
}
