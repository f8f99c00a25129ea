import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { IdempotencyOptionsError } from '../errors/idempotency-options.error.js';
import { RESOLVED_OPTIONS } from '../idempotency.internal-constants.js';
import { messages } from '../idempotency.messages.js';
import type { MetricsRegistry, ResolvedIdempotencyOptions } from '../idempotency.options.js';
import { loadIfInstalled, loadOptionalPackage } from '../optional/load-optional-package.js';
import { DELIVERY_OUTCOMES } from './delivery-outcome.js';
import { IdempotencyMetricsService, type LeaseRenewalOutcome } from './idempotency-metrics.service.js';

type PromClient = typeof import('prom-client');

const DELIVERIES = 'idempotency_deliveries_total';
const LEASE_RENEWAL_OUTCOMES: readonly LeaseRenewalOutcome[] = ['renewed', 'lost', 'failed'];

/**
 * Registers the module's counters in a `prom-client` registry (the module option `metrics.registry`,
 * else prom-client's default one when the package is installed), read from
 * `IdempotencyMetricsService` at each scrape, and removes them at shutdown.
 */
@Injectable()
export class PrometheusExporter implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private registry: MetricsRegistry | undefined;
  private readonly names: string[] = [];

  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly metrics: IdempotencyMetricsService,
  ) {}

  async onModuleInit(): Promise<void> {
    const configured = this.options.metricsRegistry;
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
        throw new IdempotencyOptionsError(messages.metricsRegisteredTwice(DELIVERIES));
      }
      this.logger.warn(messages.metricsAlreadyInDefaultRegistry());
      return;
    }
    this.registerAll(client);
  }

  onApplicationShutdown(): void {
    this.names.splice(0).forEach((name) => this.registry?.removeSingleMetric(name));
  }

  private registerAll({ Counter, Gauge }: PromClient): void {
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

  private register(name: string, create: (name: string) => unknown): void {
    create(name);
    this.names.push(name);
  }
}
