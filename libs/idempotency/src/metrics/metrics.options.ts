import { type Duration, MAX_TIMER_MS, toMilliseconds } from '../duration/duration.js';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { metricsMessages } from './metrics.messages.js';

/**
 * A `prom-client` registry: the module's counters are registered in it (collected from
 * `IdempotencyMetricsService` at each scrape), so they show on the `/metrics` the application
 * already serves.
 */
export interface MetricsRegistry {
  registerMetric(metric: never): void;
  getSingleMetric(name: string): unknown;
  removeSingleMetric(name: string): void;
}

/** Where the module's counters go. */
export interface MetricsOptions {
  /**
   * The `prom-client` registry to register the counters in, or `false` for none (they stay
   * readable through `IdempotencyMetricsService`).
   * @default prom-client's default registry (`register`) when `prom-client` is installed; none otherwise
   */
  registry?: MetricsRegistry | false;
  /**
   * How often the store's gauges (`idempotency_store_*`: estimated rows, size, purge lag, age of
   * the oldest unexpired row) are sampled, with the health indicator's query (catalog statistics
   * and two probes of the expiry index, never a `count(*)`). `false`: never. Sampled only while a
   * registry is in use, first at application bootstrap.
   * @default '1m'
   */
  storeSampleInterval?: Duration | false;
}

/**
 * `metrics` with its defaults applied.
 * @internal
 */
export interface ResolvedMetricsOptions {
  /** undefined: prom-client's default registry if it is installed. */
  readonly registry: MetricsRegistry | false | undefined;
  /** null: the store's gauges are never sampled. */
  readonly storeSampleIntervalMs: number | null;
}

/** The token of the metrics' slice of the module's options. @internal */
export const METRICS_OPTIONS = Symbol('IDEMPOTENCY:METRICS_OPTIONS');

/**
 * `metrics` with its defaults applied. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveMetrics({ registry, storeSampleInterval = '1m' }: MetricsOptions): ResolvedMetricsOptions {
  if (registry !== undefined && registry !== false && typeof (registry as MetricsRegistry)?.registerMetric !== 'function') {
    throw new IdempotencyOptionsError(metricsMessages.invalidMetricsRegistry());
  }
  return {
    registry,
    storeSampleIntervalMs: storeSampleInterval === false ? null : toMilliseconds('metrics.storeSampleInterval', storeSampleInterval, MAX_TIMER_MS),
  };
}
