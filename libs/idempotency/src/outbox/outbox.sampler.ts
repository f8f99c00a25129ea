import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DataLayerJoin } from '../data-layers/data-layer-join.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import { METRICS_OPTIONS, type ResolvedMetricsOptions } from '../metrics/metrics.options.js';
import { metricsMessages } from '../metrics/metrics.messages.js';
import { PrometheusExporter } from '../metrics/prometheus.exporter.js';
import { RepeatingTimer } from '../scheduling/repeating-timer.js';
import { OutboxSchemaCheck } from './outbox-schema.check.js';
import { OUTBOX_OPTIONS, type ResolvedOutboxOptions } from './outbox.options.js';
import { readOutboxState } from './outbox.queries.js';

/**
 * With an `outbox` and a metrics registry: registers the outbox's metrics, and reads its lag and
 * dead letters for the gauges `idempotency_outbox_lag_seconds` and `idempotency_outbox_dead_letters`
 * every `metrics.storeSampleInterval`, as the store's are read.
 * @internal
 */
@Injectable()
export class OutboxSampler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private timer: RepeatingTimer | undefined;
  private stopped = false;

  constructor(
    @Inject(OUTBOX_OPTIONS) private readonly outbox: ResolvedOutboxOptions | null,
    @Inject(METRICS_OPTIONS) private readonly options: ResolvedMetricsOptions,
    private readonly metrics: IdempotencyMetricsService,
    private readonly exporter: PrometheusExporter,
    private readonly join: DataLayerJoin,
    private readonly schema: OutboxSchemaCheck,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const outbox = this.outbox;
    if (outbox === null || !this.exporter.isRegistered) {
      return;
    }
    this.exporter.registerOutbox();
    if (this.options.storeSampleIntervalMs === null || !(await this.schema.passed()) || this.stopped) {
      return;
    }
    this.timer = new RepeatingTimer(this.options.storeSampleIntervalMs, () => this.sample(outbox.tableName));
    this.timer.start({ now: true });
  }

  beforeApplicationShutdown(): void {
    this.stopped = true;
    this.timer?.stop();
  }

  private async sample(table: string): Promise<void> {
    try {
      this.metrics.recordOutboxSample(await readOutboxState(this.join, table));
    } catch (error) {
      this.logger.warn(metricsMessages.storeSampleFailed(table, (error as Error).message));
    }
  }
}
