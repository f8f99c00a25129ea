import { type Duration, MAX_TIMER_MS, toMilliseconds } from '../duration/duration.js';
import { IdempotencyOptionsError } from '../errors/idempotency-options.error.js';
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
 * `metrics.registry`, checked. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveMetricsRegistry(metrics: MetricsOptions): MetricsRegistry | false | undefined {
  const { registry } = metrics;
  if (registry !== undefined && registry !== false && typeof (registry as MetricsRegistry)?.registerMetric !== 'function') {
    throw new IdempotencyOptionsError(metricsMessages.invalidMetricsRegistry());
  }
  return registry;
}

/**
 * `metrics.storeSampleInterval` in milliseconds, null for never. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveSampleInterval(interval: Duration | false): number | null {
  return interval === false ? null : toMilliseconds('metrics.storeSampleInterval', interval, MAX_TIMER_MS);
}
