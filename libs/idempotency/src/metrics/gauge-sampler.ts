import { Logger } from '@nestjs/common';
import { RepeatingTask, type TaskSchedule } from '../scheduling/repeating-task.js';
import type { SchemaBootCheck } from '../schema/schema-boot-check.js';
import type { StoreHandle } from '../store/store.handle.js';
import type { IdempotencyMetricsService } from './idempotency-metrics.service.js';
import { metricsMessages } from './metrics.messages.js';
import type { ResolvedMetricsOptions } from './metrics.options.js';
import type { PrometheusExporter } from './prometheus.exporter.js';

/**
 * Reads a table of the store for gauges every `metrics.storeSampleInterval`, from application
 * bootstrap to shutdown, while the module's metrics are registered in a prom-client registry. The
 * first sample is taken once the start-up check of `schema` passed, and none when it failed: the
 * schema error, not a failed sample, says what the store lacks. A failed sample is logged and the
 * gauges keep the last one.
 * @internal
 */
export abstract class GaugeSampler extends RepeatingTask {
  private readonly logger = new Logger('Idempotency');

  constructor(
    protected readonly store: StoreHandle,
    protected readonly metrics: IdempotencyMetricsService,
    protected readonly exporter: PrometheusExporter,
    private readonly options: ResolvedMetricsOptions,
    private readonly schema: SchemaBootCheck,
  ) {
    super();
  }

  /** The table sampled, named in the warning of a failed sample. */
  protected abstract readonly table: string;

  /** Reads the table and records what it read. */
  protected abstract sample(): Promise<void>;

  /** Whether there is something to sample (its metrics are registered then); true unless a sampler says otherwise. */
  protected register(): boolean {
    return true;
  }

  protected async schedule(): Promise<TaskSchedule | null> {
    const intervalMs = this.options.storeSampleIntervalMs;
    if (!this.exporter.isRegistered || !this.register() || intervalMs === null || !(await this.schema.passed())) {
      return null;
    }
    return { intervalMs, now: true };
  }

  protected async run(): Promise<void> {
    try {
      await this.sample();
    } catch (error) {
      this.logger.warn(metricsMessages.storeSampleFailed(this.table, (error as Error).message));
    }
  }
}
