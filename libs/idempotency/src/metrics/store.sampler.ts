import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { estimateRows, readStoreStatistics } from './store-statistics.queries.js';
import { metricsMessages } from './metrics.messages.js';
import { type ResolvedStoreOptions, STORE_OPTIONS } from '../data-layers/store.options.js';
import { METRICS_OPTIONS, type ResolvedMetricsOptions } from './metrics.options.js';
import { DataLayerJoin } from '../data-layers/data-layer-join.js';
import { RepeatingTimer } from '../scheduling/repeating-timer.js';
import { StoreSchemaCheck } from '../discovery/store-schema.check.js';
import { IdempotencyMetricsService } from './idempotency-metrics.service.js';
import { PrometheusExporter } from './prometheus.exporter.js';

/**
 * Samples the store for its gauges every `metrics.storeSampleInterval`, with the health
 * indicator's query (catalog statistics and two probes of the expiry index), from application
 * bootstrap to shutdown, while the module's metrics are registered in a prom-client registry. The
 * first sample waits for the start-up schema check, and none is taken when it fails: the schema
 * error, not a failed sample, says what the store lacks.
 * Each sample starts one interval after the previous one ended; the timer does not keep the
 * process alive. A failed sample is logged and the gauges keep the last one (their timestamp says how old).
 * @internal
 */
@Injectable()
export class StoreSampler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private timer: RepeatingTimer | undefined;
  private stopped = false;

  constructor(
    @Inject(STORE_OPTIONS) private readonly store: ResolvedStoreOptions,
    @Inject(METRICS_OPTIONS) private readonly options: ResolvedMetricsOptions,
    private readonly metrics: IdempotencyMetricsService,
    private readonly exporter: PrometheusExporter,
    private readonly join: DataLayerJoin,
    private readonly schema: StoreSchemaCheck,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.options.storeSampleIntervalMs === null || !this.exporter.isRegistered || !(await this.schema.passed()) || this.stopped) {
      return;
    }
    this.timer = new RepeatingTimer(this.options.storeSampleIntervalMs, () => this.sample());
    this.timer.start({ now: true });
  }

  beforeApplicationShutdown(): void {
    this.stopped = true;
    this.timer?.stop();
  }

  private async sample(): Promise<void> {
    try {
      const statistics = await readStoreStatistics(this.join, this.store.tableName);
      this.metrics.recordStoreSample({
        estimatedRows: estimateRows(statistics),
        totalBytes: statistics.total_bytes,
        purgeLagMs: statistics.lag_ms ?? 0,
        oldestRowAgeMs: statistics.oldest_age_ms,
        sampledAt: new Date(),
      });
    } catch (error) {
      this.logger.warn(metricsMessages.storeSampleFailed(this.store.tableName, (error as Error).message));
    }
  }
}
