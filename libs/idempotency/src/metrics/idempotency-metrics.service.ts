import { Inject, Injectable } from '@nestjs/common';
import { RESOLVED_OPTIONS } from '../idempotency.internal-constants.js';
import type { ResolvedIdempotencyOptions } from '../idempotency.options.js';
import type { PurgeOutcome, PurgeRun } from '../purge/purge-run.js';
import type { DeliveryOutcome } from './delivery-outcome.js';
import { DuplicateRateWindow } from './duplicate-rate.window.js';
import { toPrometheusText } from './prometheus-text.formatter.js';

/** Deliveries to one consumer from one sender, by outcome, since the application started. */
export interface DeliveryCounts extends Record<DeliveryOutcome, number> {
  consumer: string;
  sender: string;
}

/** A sender's deliveries over the recent window (`health.duplicateRateWindow`), all consumers together. */
export interface SenderDuplicateRate {
  readonly sender: string;
  readonly deliveries: number;
  readonly duplicates: number;
  /** `duplicates / deliveries`. */
  readonly rate: number;
}

/** What this instance's purge did since the application started. */
export interface PurgeFigures {
  /** Runs by outcome. */
  readonly runs: Readonly<Record<PurgeOutcome, number>>;
  /** Expired rows deleted, all runs together. */
  readonly rows: number;
  readonly lastRun: PurgeRun | null;
  /** When the last `purged` run ended. */
  readonly lastSuccessAt: Date | null;
}

/** Everything the module counts, at one moment. */
export interface IdempotencyMetricsSnapshot {
  /** When counting started (the application's start). */
  readonly since: Date;
  readonly deliveries: readonly DeliveryCounts[];
  readonly duplicateRates: readonly SenderDuplicateRate[];
  readonly purge: PurgeFigures;
}

/**
 * The module's counters, per instance and in memory: deliveries per consumer and sender by outcome,
 * each sender's duplicate rate over a recent window, and the purge's figures.
 *
 * @example
 * ```ts
 * @Get('metrics')
 * @Header('Content-Type', PROMETHEUS_CONTENT_TYPE)
 * metrics() {
 *   return this.idempotencyMetrics.toPrometheusText();
 * }
 * ```
 */
@Injectable()
export class IdempotencyMetricsService {
  /** When counting started (the application's start). */
  readonly since = new Date();
  private readonly deliveryCounts = new Map<string, DeliveryCounts>();
  private readonly windows = new Map<string, DuplicateRateWindow>();
  private readonly purgeRuns: Record<PurgeOutcome, number> = { purged: 0, skipped: 0, failed: 0 };
  private purgedRows = 0;
  private lastRun: PurgeRun | null = null;
  private lastSuccessAt: Date | null = null;

  constructor(@Inject(RESOLVED_OPTIONS) private readonly options: ResolvedIdempotencyOptions) {}

  /** Counts one delivery. Called by the transports and the claiming core. */
  recordDelivery(delivery: { readonly consumer: string; readonly sender: string }, outcome: DeliveryOutcome): void {
    const id = JSON.stringify([delivery.consumer, delivery.sender]);
    let counts = this.deliveryCounts.get(id);
    if (!counts) {
      counts = { consumer: delivery.consumer, sender: delivery.sender, processed: 0, duplicate: 0, failed: 0, rejected: 0 };
      this.deliveryCounts.set(id, counts);
    }
    counts[outcome] += 1;
    let window = this.windows.get(delivery.sender);
    if (!window) {
      window = new DuplicateRateWindow(this.options.health.duplicateRateWindowMs);
      this.windows.set(delivery.sender, window);
    }
    window.add(outcome === 'duplicate');
  }

  /** Records a purge run. Called by `IdempotencyPurgeService`. */
  recordPurge(run: PurgeRun): void {
    this.purgeRuns[run.outcome] += 1;
    this.purgedRows += run.rows;
    this.lastRun = run;
    if (run.outcome === 'purged') {
      this.lastSuccessAt = new Date(run.startedAt.getTime() + run.durationMs);
    }
  }

  /** Deliveries per consumer and sender since the start. */
  deliveries(): DeliveryCounts[] {
    return [...this.deliveryCounts.values()].map((counts) => ({ ...counts }));
  }

  /** Each sender's duplicate rate over the recent window; senders without deliveries in it are left out. */
  duplicateRates(): SenderDuplicateRate[] {
    return [...this.windows.entries()]
      .map(([sender, window]) => ({ sender, ...window.read() }))
      .filter(({ deliveries }) => deliveries > 0)
      .map((counts) => ({ ...counts, rate: counts.duplicates / counts.deliveries }));
  }

  /** The purge's figures. */
  purge(): PurgeFigures {
    return { runs: { ...this.purgeRuns }, rows: this.purgedRows, lastRun: this.lastRun, lastSuccessAt: this.lastSuccessAt };
  }

  snapshot(): IdempotencyMetricsSnapshot {
    return { since: this.since, deliveries: this.deliveries(), duplicateRates: this.duplicateRates(), purge: this.purge() };
  }

  /** The counters in the Prometheus text exposition format (serve it as `PROMETHEUS_CONTENT_TYPE`). */
  toPrometheusText(): string {
    return toPrometheusText(this.snapshot());
  }
}
