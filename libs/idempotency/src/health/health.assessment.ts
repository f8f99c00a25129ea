import { formatDuration } from '../duration/duration.js';
import { healthMessages } from './health.messages.js';
import type { ResolvedHealthOptions } from './health.options.js';
import type { SenderDuplicateRate } from '../metrics/idempotency-metrics.service.js';

/** What the health indicator measured. */
export interface HealthFigures {
  /** The planner's estimate of the store's rows; null when the table was never analysed. */
  estimatedRows: number | null;
  /** How long ago the oldest expired, not yet purged id expired; 0 when there is none. */
  purgeLagMs: number;
  /** Since this instance's last successful purge (or its start); null when its purge timer is off. */
  timeSincePurgeMs: number | null;
  duplicateRates: readonly SenderDuplicateRate[];
  /** null without an outbox. */
  outbox: { readonly lagMs: number; readonly deadLetters: number } | null;
}

/** Every threshold the figures cross, each as a sentence for the operator; empty when healthy. */
export function findProblems(figures: HealthFigures, thresholds: ResolvedHealthOptions): string[] {
  const problems: string[] = [];
  if (thresholds.maxEstimatedRows !== null && figures.estimatedRows !== null && figures.estimatedRows > thresholds.maxEstimatedRows) {
    problems.push(healthMessages.storeTooLarge(figures.estimatedRows, thresholds.maxEstimatedRows));
  }
  if (figures.purgeLagMs > thresholds.maxPurgeLagMs) {
    problems.push(healthMessages.purgeLagging(seconds(figures.purgeLagMs), formatDuration(thresholds.maxPurgeLagMs)));
  }
  if (
    thresholds.maxTimeSincePurgeMs !== null &&
    figures.timeSincePurgeMs !== null &&
    figures.timeSincePurgeMs > thresholds.maxTimeSincePurgeMs
  ) {
    problems.push(healthMessages.purgeOverdue(seconds(figures.timeSincePurgeMs), formatDuration(thresholds.maxTimeSincePurgeMs)));
  }
  for (const { sender, deliveries, duplicates, rate } of figures.duplicateRates) {
    if (deliveries >= thresholds.duplicateRateMinDeliveries && rate > thresholds.maxDuplicateRate) {
      problems.push(
        healthMessages.duplicateRateHigh(
          sender,
          duplicates,
          deliveries,
          formatDuration(thresholds.duplicateRateWindowMs),
          percent(rate),
          percent(thresholds.maxDuplicateRate),
        ),
      );
    }
  }
  if (figures.outbox !== null && figures.outbox.lagMs > thresholds.maxOutboxLagMs) {
    problems.push(healthMessages.outboxLagging(seconds(figures.outbox.lagMs), formatDuration(thresholds.maxOutboxLagMs)));
  }
  if (figures.outbox !== null && figures.outbox.deadLetters > thresholds.maxOutboxDeadLetters) {
    problems.push(healthMessages.outboxDeadLetters(figures.outbox.deadLetters, thresholds.maxOutboxDeadLetters));
  }
  return problems;
}

function seconds(milliseconds: number): string {
  return `${Math.round(milliseconds / 1000)}s`;
}

function percent(share: number): string {
  return `${Math.round(share * 1000) / 10}%`;
}
