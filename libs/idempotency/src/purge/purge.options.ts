import { type Duration, MAX_TIMER_MS, toMilliseconds } from '../duration/duration.js';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { purgeMessages } from './purge.messages.js';

/** Options of the scheduled purge. */
export interface PurgeOptions {
  /**
   * How often this instance purges expired ids. `false` turns the timer off, for instances that
   * should never purge; `IdempotencyPurgeService.purgeNow()` still works.
   * @default '1m'
   */
  interval?: Duration | false;
  /**
   * Rows deleted per batch; each batch is its own short transaction, so a claim that collides with
   * a row being purged waits at most one batch.
   * @default 5000
   */
  batchSize?: number;
}

/**
 * `purge` with its defaults applied.
 * @internal
 */
export interface ResolvedPurgeOptions {
  /** null when the timer is off. */
  intervalMs: number | null;
  batchSize: number;
}

/** The token of the purge's slice of the module's options. @internal */
export const PURGE_OPTIONS = Symbol('IDEMPOTENCY:PURGE_OPTIONS');

const MAX_PURGE_BATCH_SIZE = 100_000;

/**
 * `purge` with its defaults applied. @throws IdempotencyOptionsError
 * @internal
 */
export function resolvePurge(purge: PurgeOptions): ResolvedPurgeOptions {
  const interval = purge.interval ?? '1m';
  const batchSize = purge.batchSize ?? 5000;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_PURGE_BATCH_SIZE) {
    throw new IdempotencyOptionsError(purgeMessages.invalidBatchSize(batchSize, MAX_PURGE_BATCH_SIZE));
  }
  return { intervalMs: interval === false ? null : toMilliseconds('purge.interval', interval, MAX_TIMER_MS), batchSize };
}
