import { Inject, Injectable } from '@nestjs/common';
import { GaugeSampler } from '../metrics/gauge-sampler.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import { METRICS_OPTIONS, type ResolvedMetricsOptions } from '../metrics/metrics.options.js';
import { PrometheusExporter } from '../metrics/prometheus.exporter.js';
import { StoreHandle } from '../store/store.handle.js';
import { OutboxSchemaCheck } from './outbox-schema.check.js';

/**
 * With an `outbox` and a metrics registry: registers the outbox's metrics, and reads its lag and
 * dead letters for the gauges `idempotency_outbox_lag_seconds` and `idempotency_outbox_dead_letters`
 * every `metrics.storeSampleInterval`, as the store's are read.
 * @internal
 */
@Injectable()
export class OutboxSampler extends GaugeSampler {
  constructor(
    store: StoreHandle,
    metrics: IdempotencyMetricsService,
    exporter: PrometheusExporter,
    @Inject(METRICS_OPTIONS) options: ResolvedMetricsOptions,
    schema: OutboxSchemaCheck,
  ) {
    super(store, metrics, exporter, options, schema);
  }

  protected get table(): string {
    return this.store.outboxTable!;
  }

  protected override register(): boolean {
    if (this.store.outboxTable === null) {
      return false;
    }
    this.exporter.registerOutbox();
    return true;
  }

  protected async sample(): Promise<void> {
    this.metrics.recordOutboxSample(await this.store.outboxState());
  }
}
