import { Inject, Injectable } from '@nestjs/common';
import { METRICS_OPTIONS, type ResolvedMetricsOptions } from './metrics.options.js';
import { StoreHandle } from '../store/store.handle.js';
import { StoreSchemaCheck } from '../discovery/store-schema.check.js';
import { GaugeSampler } from './gauge-sampler.js';
import { IdempotencyMetricsService } from './idempotency-metrics.service.js';
import { PrometheusExporter } from './prometheus.exporter.js';

/**
 * Samples the processed-messages table for its gauges, with the health indicator's query (catalog
 * statistics and two probes of the expiry index), after the start-up schema check.
 * @internal
 */
@Injectable()
export class StoreSampler extends GaugeSampler {
  constructor(
    store: StoreHandle,
    metrics: IdempotencyMetricsService,
    exporter: PrometheusExporter,
    @Inject(METRICS_OPTIONS) options: ResolvedMetricsOptions,
    schema: StoreSchemaCheck,
  ) {
    super(store, metrics, exporter, options, schema);
  }

  protected get table(): string {
    return this.store.table;
  }

  protected async sample(): Promise<void> {
    const statistics = await this.store.statistics();
    this.metrics.recordStoreSample({
      estimatedRows: statistics.estimatedRows,
      totalBytes: statistics.totalBytes,
      purgeLagMs: statistics.lagMs ?? 0,
      oldestRowAgeMs: statistics.oldestAgeMs,
      sampledAt: new Date(),
    });
  }
}
