import { type Duration, formatDuration, MAX_RETENTION_MS, MAX_TIMER_MS, toMilliseconds } from '../duration/duration.js';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { isPositiveInteger } from '../options/option-values.js';
import { optionValueMessages } from '../options/option-values.messages.js';
import type { ResolvedPurgeOptions } from '../purge/purge.options.js';
import { healthMessages } from './health.messages.js';

/** Thresholds of `IdempotencyHealthIndicator`. */
export interface HealthOptions {
  /**
   * Down when the oldest expired id not yet purged expired longer ago than this.
   * Must be longer than `purge.interval`.
   * @default '1h'
   */
  maxPurgeLag?: Duration;
  /**
   * Down when this instance's last successful purge (or its start) is older than this. Not checked
   * when `purge.interval` is `false`. Must be longer than `purge.interval`.
   * @default '10m'
   */
  maxTimeSincePurge?: Duration;
  /**
   * Down when the share of a sender's deliveries that were duplicates, over `duplicateRateWindow`,
   * exceeds this (a number from 0 to 1). Counted per instance.
   * @default 0.5
   */
  maxDuplicateRate?: number;
  /**
   * The recent window over which the duplicate rate is counted.
   * @default '5m'
   */
  duplicateRateWindow?: Duration;
  /**
   * A sender with fewer deliveries than this in the window never turns the indicator down: a rate
   * of one duplicate in two deliveries says nothing.
   * @default 20
   */
  duplicateRateMinDeliveries?: number;
  /**
   * Down when the store's estimated row count exceeds this.
   * @default no limit
   */
  maxEstimatedRows?: number;
  /**
   * With an `outbox`: down when its oldest message not dispatched yet (dead letters aside) was
   * written longer ago than this: the relay is stopped, or the broker refuses it.
   * @default '5m'
   */
  maxOutboxLag?: Duration;
  /**
   * With an `outbox`: down when more messages than this are parked as dead letters (each holds
   * back the later messages of its ordering key until `IdempotencyAdmin` requeues or discards it).
   * @default 0
   */
  maxOutboxDeadLetters?: number;
}

/**
 * `health` with its defaults applied and durations in milliseconds.
 * @internal
 */
export interface ResolvedHealthOptions {
  maxPurgeLagMs: number;
  /** null when the purge timer is off on this instance. */
  maxTimeSincePurgeMs: number | null;
  maxDuplicateRate: number;
  duplicateRateWindowMs: number;
  duplicateRateMinDeliveries: number;
  /** null for no limit. */
  maxEstimatedRows: number | null;
  maxOutboxLagMs: number;
  maxOutboxDeadLetters: number;
}

/** The token of the health indicator's slice of the module's options. @internal */
export const HEALTH_OPTIONS = Symbol('IDEMPOTENCY:HEALTH_OPTIONS');

/**
 * `health` with its defaults applied, checked against the purge interval. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveHealth(health: HealthOptions, purge: ResolvedPurgeOptions): ResolvedHealthOptions {
  const maxDuplicateRate = health.maxDuplicateRate ?? 0.5;
  if (typeof maxDuplicateRate !== 'number' || !(maxDuplicateRate >= 0 && maxDuplicateRate <= 1)) {
    throw new IdempotencyOptionsError(healthMessages.invalidDuplicateRate(maxDuplicateRate));
  }
  const duplicateRateMinDeliveries = health.duplicateRateMinDeliveries ?? 20;
  if (!isPositiveInteger(duplicateRateMinDeliveries)) {
    throw new IdempotencyOptionsError(optionValueMessages.invalidCount('health.duplicateRateMinDeliveries', duplicateRateMinDeliveries));
  }
  const maxEstimatedRows = health.maxEstimatedRows ?? null;
  if (maxEstimatedRows !== null && !isPositiveInteger(maxEstimatedRows)) {
    throw new IdempotencyOptionsError(optionValueMessages.invalidCount('health.maxEstimatedRows', maxEstimatedRows));
  }
  const maxOutboxDeadLetters = health.maxOutboxDeadLetters ?? 0;
  if (!Number.isInteger(maxOutboxDeadLetters) || maxOutboxDeadLetters < 0) {
    throw new IdempotencyOptionsError(healthMessages.invalidDeadLetterCount(maxOutboxDeadLetters));
  }
  const maxPurgeLagMs = toMilliseconds('health.maxPurgeLag', health.maxPurgeLag ?? '1h', MAX_RETENTION_MS);
  const maxTimeSincePurgeMs = toMilliseconds('health.maxTimeSincePurge', health.maxTimeSincePurge ?? '10m', MAX_RETENTION_MS);
  for (const [name, thresholdMs] of [['maxPurgeLag', maxPurgeLagMs], ['maxTimeSincePurge', maxTimeSincePurgeMs]] as const) {
    if (purge.intervalMs !== null && thresholdMs <= purge.intervalMs) {
      throw new IdempotencyOptionsError(healthMessages.thresholdWithinPurgeInterval(name, formatDuration(thresholdMs), formatDuration(purge.intervalMs)));
    }
  }
  return {
    maxPurgeLagMs,
    maxTimeSincePurgeMs: purge.intervalMs === null ? null : maxTimeSincePurgeMs,
    maxDuplicateRate,
    duplicateRateWindowMs: toMilliseconds('health.duplicateRateWindow', health.duplicateRateWindow ?? '5m', MAX_TIMER_MS),
    duplicateRateMinDeliveries,
    maxEstimatedRows,
    maxOutboxLagMs: toMilliseconds('health.maxOutboxLag', health.maxOutboxLag ?? '5m', MAX_RETENTION_MS),
    maxOutboxDeadLetters,
  };
}
