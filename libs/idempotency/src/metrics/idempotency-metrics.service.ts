import type { OutboxSample } from '../store/outbox-sample.js';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { MAX_COUNTED_SENDERS, OTHER_SENDERS } from './metrics.constants.js';
import { metricsMessages } from './metrics.messages.js';
import { RESOLVED_OPTIONS, type ResolvedIdempotencyOptions } from '../idempotency.options.js';
import type { PurgeOutcome, PurgeRun } from '../errors/idempotency.errors.js';
import type { DeliveryOutcome } from './delivery-outcome.js';
import { DuplicateRateWindow } from './duplicate-rate.window.js';

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

/** What an operator did to one consumer's keys through `IdempotencyAdmin`, since the application started. */
export interface AdminActionCounts {
  readonly consumer: string;
  /** Keys forgotten. */
  readonly forget: number;
  /** Leases released. */
  readonly release: number;
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

/**
 * How a lease-mode handler's lease was renewed while it ran (lease renewal, `renewLeaseFor`):
 * - `renewed`: the store moved the lease's expiry on;
 * - `lost`: the store refused, as another delivery had taken the lease over (renewing then stops);
 * - `failed`: the store could not be reached or failed (the next renewal tries again).
 */
export type LeaseRenewalOutcome = 'renewed' | 'lost' | 'failed';

/** Lease renewals of one consumer's deliveries, by outcome, since the application started. */
export interface LeaseRenewalCounts extends Record<LeaseRenewalOutcome, number> {
  consumer: string;
}

/** What happened to one consumer's leases since the application started (lease mode). */
export interface LeaseCounts {
  consumer: string;
  /** Leases this instance took over from a holder that let them expire. */
  takeovers: number;
  /** Completions the store refused because another delivery had taken the lease over. */
  refusedCompletions: number;
}

/** What a lease did, as counted: see {@link LeaseCounts}. */
export type LeaseEvent = 'takeover' | 'refusedCompletion';

/** Deliveries to one consumer answered "retry later", by the HTTP status that says so (409 or 503). */
export interface RefusalCounts {
  consumer: string;
  status: 409 | 503;
  count: number;
}

/** The store's figures at one moment, sampled every `metrics.storeSampleInterval` while a registry is in use. */
export interface StoreSample {
  /** The planner's estimate; null until the table is first analysed. */
  readonly estimatedRows: number | null;
  readonly totalBytes: number;
  /** How long ago the oldest expired, not yet purged id expired; 0 when none has. */
  readonly purgeLagMs: number;
  /** Age of the unexpired row that expires first (the oldest one when every handler keeps ids as long); null for an empty store. */
  readonly oldestRowAgeMs: number | null;
  readonly sampledAt: Date;
}

/** What the outbox relays of this instance sent, by destination (the publisher's name). */
export interface OutboxCounts {
  readonly destination: string;
  /** Messages the broker confirmed. */
  readonly published: number;
  /** Publishes that failed (each retried later, or parked). */
  readonly failed: number;
}

/**
 * Where the module's timings go: prom-client's histograms when a registry is in use.
 * @internal
 */
export interface TimingSink {
  claimWait(consumer: string, seconds: number): void;
  claimToCommit(consumer: string, seconds: number): void;
}

/** Everything the module counts, at one moment. */
export interface IdempotencyMetricsSnapshot {
  /** When counting started (the application's start). */
  readonly since: Date;
  readonly deliveries: readonly DeliveryCounts[];
  readonly duplicateRates: readonly SenderDuplicateRate[];
  readonly purge: PurgeFigures;
  readonly leaseRenewals: readonly LeaseRenewalCounts[];
}

/**
 * The module's counters, per instance and in memory: deliveries per consumer and sender by outcome,
 * each sender's duplicate rate over a recent window, and the purge's figures. With `prom-client`
 * installed they are also registered for Prometheus (module option `metrics`). At most 100 sender
 * names are counted apart; further ones are counted together as `(other)`.
 */
@Injectable()
export class IdempotencyMetricsService {
  /** When counting started (the application's start). */
  readonly since = new Date();
  private readonly logger = new Logger('Idempotency');
  /** Every consumer and sender's counts, in the order they were first counted. */
  private readonly deliveryCounts: DeliveryCounts[] = [];
  /** The same counts by consumer, then sender. */
  private readonly countsByConsumer = new Map<string, Map<string, DeliveryCounts>>();
  private readonly renewalCounts = new Map<string, LeaseRenewalCounts>();
  private readonly windows = new Map<string, DuplicateRateWindow>();
  private readonly purgeRuns: Record<PurgeOutcome, number> = { purged: 0, skipped: 0, failed: 0 };
  private purgedRows = 0;
  private lastRun: PurgeRun | null = null;
  private lastSuccessAt: Date | null = null;
  private readonly adminCounts = new Map<string, { consumer: string; forget: number; release: number }>();
  private readonly inFlightCounts = new Map<string, { deliveries: number }>();
  private readonly leaseCounts = new Map<string, LeaseCounts>();
  private readonly refusalCounts = new Map<string, RefusalCounts>();
  private storeSample: StoreSample | null = null;
  private readonly outboxCounts = new Map<string, { destination: string; published: number; failed: number }>();
  private outboxDeadLettered = 0;
  private outboxSample: OutboxSample | null = null;
  /**
   * Set by the Prometheus exporter while it is registered.
   * @internal
   */
  timings: TimingSink | undefined;
  /** Where the outbox relay's batch sizes go: prom-client's histogram when the outbox's metrics are registered. @internal */
  outboxBatches: ((size: number) => void) | undefined;

  /** @internal Nest constructs it. */
  constructor(@Inject(RESOLVED_OPTIONS) private readonly options: ResolvedIdempotencyOptions) {}

  /** Counts one delivery. Called by the delivery observer. */
  recordDelivery(delivery: { readonly consumer: string; readonly sender: string }, outcome: DeliveryOutcome): void {
    const { consumer } = delivery;
    const sender = this.counted(delivery.sender);
    let bySender = this.countsByConsumer.get(consumer);
    if (!bySender) {
      bySender = new Map();
      this.countsByConsumer.set(consumer, bySender);
    }
    let counts = bySender.get(sender);
    if (!counts) {
      counts = { consumer, sender, processed: 0, duplicate: 0, rejected: 0, unavailable: 0, failed: 0 };
      bySender.set(sender, counts);
      this.deliveryCounts.push(counts);
    }
    counts[outcome] += 1;
    this.windows.get(sender)?.add(outcome === 'duplicate');
  }

  /** Counts one renewal of a lease of `consumer`. Called by the lease mode while a handler runs. */
  recordLeaseRenewal(consumer: string, outcome: LeaseRenewalOutcome): void {
    let counts = this.renewalCounts.get(consumer);
    if (!counts) {
      counts = { consumer, renewed: 0, lost: 0, failed: 0 };
      this.renewalCounts.set(consumer, counts);
    }
    counts[outcome] += 1;
  }

  /** A delivery to `consumer` started (`+1`) or ended (`-1`). Called by the delivery observer. */
  recordInFlight(consumer: string, change: 1 | -1): void {
    const counted = this.inFlightCounts.get(consumer);
    if (counted) {
      counted.deliveries += change;
    } else {
      this.inFlightCounts.set(consumer, { deliveries: change });
    }
  }

  /** Counts a lease takeover or a refused completion. Called by the lease mode. */
  recordLease(consumer: string, event: LeaseEvent): void {
    let counts = this.leaseCounts.get(consumer);
    if (!counts) {
      counts = { consumer, takeovers: 0, refusedCompletions: 0 };
      this.leaseCounts.set(consumer, counts);
    }
    counts[event === 'takeover' ? 'takeovers' : 'refusedCompletions'] += 1;
  }

  /** Counts a delivery answered 409 (a twin in flight, a lease taken over) or 503 (no connection, a transient failure). */
  recordRefusal(consumer: string, status: 409 | 503): void {
    const id = `${consumer}\u0000${status}`;
    const counts = this.refusalCounts.get(id) ?? this.refusalCounts.set(id, { consumer, status, count: 0 }).get(id)!;
    counts.count += 1;
  }

  /** How long a delivery waited for its claim (won, or its twin found processed). */
  recordClaimWait(consumer: string, milliseconds: number): void {
    this.timings?.claimWait(consumer, milliseconds / 1000);
  }

  /** How long a delivery held its claim before it committed. */
  recordClaimToCommit(consumer: string, milliseconds: number): void {
    this.timings?.claimToCommit(consumer, milliseconds / 1000);
  }

  /** Deliveries in progress per consumer, on this instance. */
  /** One batch of the outbox relay: the destination of each message it published or failed, and how many it parked. */
  recordOutboxBatch(batch: { readonly size: number; readonly published: readonly string[]; readonly failed: readonly string[]; readonly deadLettered: number }): void {
    const counts = (destination: string) => this.outboxCounts.get(destination) ?? this.outboxCounts.set(destination, { destination, published: 0, failed: 0 }).get(destination)!;
    batch.published.forEach((destination) => (counts(destination).published += 1));
    batch.failed.forEach((destination) => (counts(destination).failed += 1));
    this.outboxDeadLettered += batch.deadLettered;
    this.outboxBatches?.(batch.size);
  }

  outbox(): { readonly destinations: OutboxCounts[]; readonly deadLettered: number; readonly sample: OutboxSample | null } {
    return { destinations: [...this.outboxCounts.values()].map((counts) => ({ ...counts })), deadLettered: this.outboxDeadLettered, sample: this.outboxSample };
  }

  recordOutboxSample(sample: OutboxSample): void {
    this.outboxSample = sample;
  }

  inFlight(): { consumer: string; deliveries: number }[] {
    return [...this.inFlightCounts].map(([consumer, { deliveries }]) => ({ consumer, deliveries }));
  }

  /** Lease takeovers and refused completions per consumer since the start. */
  leases(): LeaseCounts[] {
    return [...this.leaseCounts.values()].map((counts) => ({ ...counts }));
  }

  /** Deliveries answered 409 or 503 per consumer since the start. */
  refusals(): RefusalCounts[] {
    return [...this.refusalCounts.values()].map((counts) => ({ ...counts }));
  }

  /** Keeps the store's latest sample. Called by the store's sampler. */
  recordStoreSample(sample: StoreSample): void {
    this.storeSample = sample;
  }

  /** The store's latest sample; null before the first one (or when none is taken: no registry, or `storeSampleInterval: false`). */
  store(): StoreSample | null {
    return this.storeSample;
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

  /** Counts a key forgotten or a lease released by `IdempotencyAdmin`. */
  recordAdminAction(consumer: string, action: 'forget' | 'release'): void {
    let counts = this.adminCounts.get(consumer);
    if (!counts) {
      counts = { consumer, forget: 0, release: 0 };
      this.adminCounts.set(consumer, counts);
    }
    counts[action] += 1;
  }

  /** Keys forgotten and leases released through `IdempotencyAdmin`, per consumer, since the start. */
  adminActions(): AdminActionCounts[] {
    return [...this.adminCounts.values()].map((counts) => ({ ...counts }));
  }

  /** Deliveries per consumer and sender since the start. */
  deliveries(): DeliveryCounts[] {
    return this.deliveryCounts.map((counts) => ({ ...counts }));
  }

  /** Lease renewals per consumer since the start; consumers whose leases were never renewed are left out. */
  leaseRenewals(): LeaseRenewalCounts[] {
    return [...this.renewalCounts.values()].map((counts) => ({ ...counts }));
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
    return {
      since: this.since,
      deliveries: this.deliveries(),
      duplicateRates: this.duplicateRates(),
      purge: this.purge(),
      leaseRenewals: this.leaseRenewals(),
    };
  }

  /** The name `sender` is counted under: itself while fewer than 100 are, else `(other)`. */
  private counted(sender: string): string {
    if (this.windows.has(sender)) {
      return sender;
    }
    if (this.windows.size >= MAX_COUNTED_SENDERS) {
      if (!this.windows.has(OTHER_SENDERS)) {
        this.logger.warn(metricsMessages.tooManySenders(MAX_COUNTED_SENDERS, OTHER_SENDERS));
        this.windows.set(OTHER_SENDERS, new DuplicateRateWindow(this.options.health.duplicateRateWindowMs));
      }
      return OTHER_SENDERS;
    }
    this.windows.set(sender, new DuplicateRateWindow(this.options.health.duplicateRateWindowMs));
    return sender;
  }
}
