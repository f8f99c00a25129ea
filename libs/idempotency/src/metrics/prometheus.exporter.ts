import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { metricsMessages } from './metrics.messages.js';
import { METRICS_OPTIONS, type MetricsRegistry, type ResolvedMetricsOptions } from './metrics.options.js';
import { loadIfInstalled, loadOptionalPackage } from '../optional/load-optional-package.js';
import { DELIVERY_OUTCOMES } from './delivery-outcome.js';
import { IdempotencyMetricsService, type LeaseRenewalOutcome, type OutboxCounts } from './idempotency-metrics.service.js';

type PromClient = typeof import('prom-client');

const DELIVERIES = 'idempotency_deliveries_total';
const LEASE_RENEWAL_OUTCOMES: readonly LeaseRenewalOutcome[] = ['renewed', 'lost', 'failed'];

/** Buckets of the timing histograms, in seconds: from a claim on an idle database to a wait for a slow twin. */
const BATCH_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];

const TIMING_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Registers the module's metrics in a `prom-client` registry (the module option `metrics.registry`,
 * else prom-client's default one when the package is installed), read from
 * `IdempotencyMetricsService` at each scrape, and removes them at shutdown.
 */
@Injectable()
export class PrometheusExporter implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private registry: MetricsRegistry | undefined;
  private readonly names: string[] = [];
  private client: PromClient | undefined;

  constructor(
    @Inject(METRICS_OPTIONS) private readonly options: ResolvedMetricsOptions,
    private readonly metrics: IdempotencyMetricsService,
  ) {}

  async onModuleInit(): Promise<void> {
    const configured = this.options.registry;
    if (configured === false) {
      return;
    }
    const load = () => import('prom-client');
    const client = configured ? await loadOptionalPackage('prom-client', 'metrics.registry', load) : await loadIfInstalled(load);
    if (!client) {
      return;
    }
    this.registry = configured ?? (client.register as unknown as MetricsRegistry);
    if (this.registry.getSingleMetric(DELIVERIES)) {
      // Another instance of the module in this process registered them in the same registry.
      if (configured) {
        throw new IdempotencyOptionsError(metricsMessages.metricsRegisteredTwice(DELIVERIES));
      }
      this.logger.warn(metricsMessages.metricsAlreadyInDefaultRegistry());
      return;
    }
    this.client = client;
    this.registerAll(client);
  }

  /** True once the module's metrics are registered (a registry is in use). */
  get isRegistered(): boolean {
    return this.names.length > 0;
  }

  onApplicationShutdown(): void {
    this.metrics.timings = undefined;
    this.metrics.outboxBatches = undefined;
    this.names.splice(0).forEach((name) => this.registry?.removeSingleMetric(name));
  }

  private registerAll(client: PromClient): void {
    this.registerCounters(client);
    this.registerOperations(client);
    this.registerStore(client);
  }

  /** Timings, deliveries in flight, refusals and lease events: what operators alert on. */
  private registerOperations({ Counter, Gauge, Histogram }: PromClient): void {
    const metrics = this.metrics;
    const registers = [this.registry as never];
    const histogram = (name: string, help: string) => {
      let created!: InstanceType<typeof Histogram<'consumer'>>;
      this.register(name, () => (created = new Histogram({ name, help, labelNames: ['consumer'], buckets: TIMING_BUCKETS, registers })));
      return created;
    };
    const claimWait = histogram(
      'idempotency_claim_wait_seconds',
      'Time from the start of a delivery to its claim won, or its twin found processed, by consumer.',
    );
    const claimToCommit = histogram('idempotency_claim_to_commit_seconds', 'Time from a claim won to its commit with the handler\'s work, by consumer.');
    metrics.timings = {
      claimWait: (consumer, seconds) => claimWait.observe({ consumer }, seconds),
      claimToCommit: (consumer, seconds) => claimToCommit.observe({ consumer }, seconds),
    };
    this.register('idempotency_in_flight_deliveries', (name) => new Gauge({
      name,
      help: 'Deliveries to idempotent handlers in progress on this instance, by consumer.',
      labelNames: ['consumer'],
      registers,
      collect() {
        this.reset();
        for (const { consumer, deliveries } of metrics.inFlight()) {
          this.set({ consumer }, deliveries);
        }
      },
    }));
    this.register('idempotency_refused_total', (name) => new Counter({
      name,
      help: 'Deliveries answered "retry later", by consumer and the HTTP status that says so: 409 (a twin in flight, a lease taken over), 503 (no connection, a transient failure); messages are retried.',
      labelNames: ['consumer', 'status'],
      registers,
      collect() {
        this.reset();
        for (const { consumer, status, count } of metrics.refusals()) {
          this.inc({ consumer, status: String(status) }, count);
        }
      },
    }));
    this.register('idempotency_lease_takeovers_total', (name) => new Counter({
      name,
      help: 'Leases taken over from a holder that let them expire (lease mode), by consumer.',
      labelNames: ['consumer'],
      registers,
      collect() {
        this.reset();
        for (const { consumer, takeovers } of metrics.leases()) {
          this.inc({ consumer }, takeovers);
        }
      },
    }));
    this.register('idempotency_lease_refused_completions_total', (name) => new Counter({
      name,
      help: 'Completions refused because another delivery had taken the lease over (lease mode), by consumer.',
      labelNames: ['consumer'],
      registers,
      collect() {
        this.reset();
        for (const { consumer, refusedCompletions } of metrics.leases()) {
          this.inc({ consumer }, refusedCompletions);
        }
      },
    }));
  }

  /** The store's gauges, from the sampler's latest sample (0 until the first one). */
  private registerStore({ Gauge }: PromClient): void {
    const metrics = this.metrics;
    const registers = [this.registry as never];
    const gauge = (name: string, help: string, read: (sample: NonNullable<ReturnType<IdempotencyMetricsService['store']>>) => number | null) =>
      this.register(name, () => new Gauge({
        name,
        help,
        registers,
        collect() {
          const sample = metrics.store();
          const value = sample ? read(sample) : null;
          this.reset();
          if (value !== null) {
            this.set(value);
          }
        },
      }));
    gauge('idempotency_store_estimated_rows', "The store's estimated row count (the planner's statistics; 0 until the table is first analysed).", (s) => s.estimatedRows);
    gauge('idempotency_store_size_bytes', "The store's size on disk, indexes and TOAST included.", (s) => s.totalBytes);
    gauge('idempotency_store_purge_lag_seconds', 'How long ago the oldest expired, not yet purged id expired; 0 when none has.', (s) => s.purgeLagMs / 1000);
    gauge(
      'idempotency_store_oldest_row_age_seconds',
      'Age of the unexpired row that expires first: how far back the store remembers when every handler keeps ids as long.',
      (s) => (s.oldestRowAgeMs === null ? null : s.oldestRowAgeMs / 1000),
    );
    gauge('idempotency_store_last_sample_timestamp_seconds', 'When the store was last sampled for these gauges, in seconds since the epoch.', (s) => s.sampledAt.getTime() / 1000);
  }

  private registerCounters({ Counter, Gauge }: PromClient): void {
    const metrics = this.metrics;
    const registers = [this.registry as never];
    this.register(DELIVERIES, (name) => new Counter({
      name,
      help: 'Deliveries to idempotent handlers, by consumer, sender and outcome.',
      labelNames: ['consumer', 'sender', 'outcome'],
      registers,
      collect() {
        this.reset();
        for (const counts of metrics.deliveries()) {
          for (const outcome of DELIVERY_OUTCOMES) {
            this.inc({ consumer: counts.consumer, sender: counts.sender, outcome }, counts[outcome]);
          }
        }
      },
    }));
    this.register('idempotency_lease_renewals_total', (name) => new Counter({
      name,
      help: 'Automatic renewals of lease-mode handlers\' leases, by consumer and outcome (renewed, lost: taken over, failed: store error).',
      labelNames: ['consumer', 'outcome'],
      registers,
      collect() {
        this.reset();
        for (const counts of metrics.leaseRenewals()) {
          for (const outcome of LEASE_RENEWAL_OUTCOMES) {
            this.inc({ consumer: counts.consumer, outcome }, counts[outcome]);
          }
        }
      },
    }));
    this.register('idempotency_admin_actions_total', (name) => new Counter({
      name,
      help: 'Keys forgotten and leases released through IdempotencyAdmin, by consumer and action.',
      labelNames: ['consumer', 'action'],
      registers,
      collect() {
        this.reset();
        for (const counts of metrics.adminActions()) {
          this.inc({ consumer: counts.consumer, action: 'forget' }, counts.forget);
          this.inc({ consumer: counts.consumer, action: 'release' }, counts.release);
        }
      },
    }));
    this.register('idempotency_purge_runs_total', (name) => new Counter({
      name,
      help: "This instance's purge runs, by outcome.",
      labelNames: ['outcome'],
      registers,
      collect() {
        this.reset();
        for (const [outcome, runs] of Object.entries(metrics.purge().runs)) {
          this.inc({ outcome }, runs);
        }
      },
    }));
    this.register('idempotency_purged_rows_total', (name) => new Counter({
      name,
      help: "Expired message ids deleted by this instance's purge.",
      registers,
      collect() {
        this.reset();
        this.inc(metrics.purge().rows);
      },
    }));
    this.register('idempotency_purge_last_duration_seconds', (name) => new Gauge({
      name,
      help: "Duration of this instance's last purge run.",
      registers,
      collect() {
        const { lastRun } = metrics.purge();
        this.reset();
        if (lastRun) {
          this.set(lastRun.durationMs / 1000);
        }
      },
    }));
    this.register('idempotency_purge_last_success_timestamp_seconds', (name) => new Gauge({
      name,
      help: "When this instance's last successful purge ended, in seconds since the epoch.",
      registers,
      collect() {
        const { lastSuccessAt } = metrics.purge();
        this.reset();
        if (lastSuccessAt) {
          this.set(lastSuccessAt.getTime() / 1000);
        }
      },
    }));
  }

  /**
   * The outbox's metrics, registered by the outbox when the module has one: its counters, the
   * batch sizes and the gauges of its lag and dead letters (from its sampler's latest sample).
   * @internal
   */
  registerOutbox(): void {
    const client = this.client;
    if (client === undefined) {
      return;
    }
    const { Counter, Gauge, Histogram } = client;
    const metrics = this.metrics;
    const registers = [this.registry as never];
    let outboxBatch!: InstanceType<typeof Histogram>;
    this.register('idempotency_outbox_batch_size', (name) => (outboxBatch = new Histogram({ name, help: 'Messages per batch of the outbox relay.', buckets: BATCH_BUCKETS, registers })));
    metrics.outboxBatches = (size) => outboxBatch.observe(size);
    for (const [name, help, read] of [
      ['idempotency_outbox_published_total', 'Outbox messages the broker confirmed, by destination (the publisher\'s name).', (counts: OutboxCounts) => counts.published],
      ['idempotency_outbox_failed_total', 'Failed publishes of outbox messages (each retried after a delay, or parked), by destination.', (counts: OutboxCounts) => counts.failed],
    ] as const) {
      this.register(name, () => new Counter({
        name,
        help,
        labelNames: ['destination'],
        registers,
        collect() {
          this.reset();
          for (const counts of metrics.outbox().destinations) {
            this.inc({ destination: counts.destination }, read(counts));
          }
        },
      }));
    }
    this.register('idempotency_outbox_dead_lettered_total', (name) => new Counter({
      name,
      help: 'Outbox messages this instance parked as dead letters after their last attempt.',
      registers,
      collect() {
        this.reset();
        this.inc(metrics.outbox().deadLettered);
      },
    }));
    for (const [name, help, read] of [
      ['idempotency_outbox_lag_seconds', 'The age of the oldest outbox message not dispatched yet (dead letters aside); 0 when every message was sent.', (lagMs: number) => lagMs / 1000],
      ['idempotency_outbox_dead_letters', 'Outbox messages parked as dead letters, waiting for IdempotencyAdmin to requeue or discard them.', (_: number, dead: number) => dead],
    ] as const) {
      this.register(name, () => new Gauge({
        name,
        help,
        registers,
        collect() {
          const sample = metrics.outbox().sample;
          this.reset();
          if (sample !== null) {
            this.set(read(sample.lagMs, sample.deadLetters));
          }
        },
      }));
    }
  }

  private register(name: string, create: (name: string) => unknown): void {
    create(name);
    this.names.push(name);
  }
}
