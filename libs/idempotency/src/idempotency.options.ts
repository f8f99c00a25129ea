import { DEFAULT_TABLE_NAME } from './idempotency.constants.js';
import { type Duration, formatDuration, toMilliseconds } from './duration/duration.js';
import { IdempotencyOptionsError } from './errors/idempotency-options.error.js';
import { messages } from './idempotency.messages.js';

/** Options of `IdempotencyModule.forRoot()` / `forRootAsync()`. Every field is optional. */
export interface IdempotencyModuleOptions {
  /**
   * Name of the TypeORM data source (as given to `TypeOrmModule.forRoot({ name })`) whose
   * PostgreSQL database holds the processed-messages table and runs the handlers' transactions.
   * @default the default data source
   */
  dataSource?: string;
  /**
   * The processed-messages table. Create it with `CreateProcessedMessagesTable` (subclass it to
   * pass another name).
   * @default 'processed_messages'
   */
  tableName?: string;
  /**
   * How long a processed message id is remembered, for handlers that set no `retention`.
   * A redelivery later than this is processed again.
   * @default '7d'
   */
  retention?: Duration;
  /**
   * How long a delivery whose handler uses `inFlight: 'wait'` waits for its twin to commit before
   * it is answered as in flight (409) after all.
   * @default '30s'
   */
  inFlightWaitTimeout?: Duration;
  /**
   * The senders whose redelivery horizon is known, by the name handlers give in `sender`. At
   * start-up the module refuses to start when a handler of a declared sender keeps its ids for less
   * than the sender's horizon; a handler with a `sender` function is checked against the longest.
   * @default {} (no sender declared, nothing checked)
   * @example `{ payments: { redeliveryHorizon: '3d' } }`
   */
  senders?: Record<string, SenderOptions>;
  /** The scheduled purge of expired ids. */
  purge?: PurgeOptions;
  /** Thresholds of `IdempotencyHealthIndicator`; each one crossed turns the indicator down. */
  health?: HealthOptions;
}

/** What the module knows about one sender. */
export interface SenderOptions {
  /**
   * How long after its first attempt the sender may still redeliver a message (Stripe: `'3d'`;
   * Shopify: `'4h'`). Every handler of this sender must keep ids at least this long.
   */
  redeliveryHorizon: Duration;
}

/** Options of the scheduled purge. */
export interface PurgeOptions {
  /**
   * How often this instance purges expired ids (through `@nestjs/schedule`'s `SchedulerRegistry`:
   * import `ScheduleModule.forRoot()`). `false` turns the timer off, for instances that should never
   * purge; `IdempotencyPurgeService.purgeNow()` still works.
   * @default '1m'
   */
  interval?: Duration | false;
  /**
   * Rows deleted per batch; each batch is its own short transaction, so a claim that collides with
   * a row being purged waits at most one batch.
   * @default 5000
   */
  batchSize?: number;
}

/** Thresholds of `IdempotencyHealthIndicator`. */
export interface HealthOptions {
  /**
   * Down when the oldest expired id not yet purged expired longer ago than this.
   * Must be longer than `purge.interval`.
   * @default '1h'
   */
  maxPurgeLag?: Duration;
  /**
   * Down when this instance's last successful purge (or its start) is older than this. Not checked
   * when `purge.interval` is `false`. Must be longer than `purge.interval`.
   * @default '10m'
   */
  maxTimeSincePurge?: Duration;
  /**
   * Down when the share of a sender's deliveries that were duplicates, over `duplicateRateWindow`,
   * exceeds this (a number from 0 to 1). Counted per instance.
   * @default 0.5
   */
  maxDuplicateRate?: number;
  /**
   * The recent window over which the duplicate rate is counted.
   * @default '5m'
   */
  duplicateRateWindow?: Duration;
  /**
   * A sender with fewer deliveries than this in the window never turns the indicator down: a rate
   * of one duplicate in two deliveries says nothing.
   * @default 20
   */
  duplicateRateMinDeliveries?: number;
  /**
   * Down when the store's estimated row count exceeds this.
   * @default no limit
   */
  maxEstimatedRows?: number;
}

/** The module's options with defaults applied and durations in milliseconds. */
export interface ResolvedIdempotencyOptions {
  dataSource: string | undefined;
  tableName: string;
  retentionMs: number;
  inFlightWaitTimeoutMs: number;
  /** Redelivery horizon of each declared sender, in milliseconds. */
  senderHorizonsMs: Record<string, number>;
  purge: ResolvedPurgeOptions;
  health: ResolvedHealthOptions;
}

/** `purge` with its defaults applied. */
export interface ResolvedPurgeOptions {
  /** null when the timer is off. */
  intervalMs: number | null;
  batchSize: number;
}

/** `health` with its defaults applied and durations in milliseconds. */
export interface ResolvedHealthOptions {
  maxPurgeLagMs: number;
  /** null when the purge timer is off on this instance. */
  maxTimeSincePurgeMs: number | null;
  maxDuplicateRate: number;
  duplicateRateWindowMs: number;
  duplicateRateMinDeliveries: number;
  /** null for no limit. */
  maxEstimatedRows: number | null;
}

const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,58}$/;

/** Applies the defaults and validates; the one place where defaults live. */
export function resolveModuleOptions(options: IdempotencyModuleOptions = {}): ResolvedIdempotencyOptions {
  const tableName = options.tableName ?? DEFAULT_TABLE_NAME;
  if (!PLAIN_IDENTIFIER.test(tableName)) {
    throw new IdempotencyOptionsError(messages.invalidTableName(options.tableName));
  }
  if (options.dataSource !== undefined && (typeof options.dataSource !== 'string' || options.dataSource === '')) {
    throw new IdempotencyOptionsError(messages.invalidDataSource(options.dataSource));
  }
  const purge = resolvePurge(options.purge ?? {});
  return {
    dataSource: options.dataSource,
    tableName,
    retentionMs: toMilliseconds('retention', options.retention ?? '7d'),
    inFlightWaitTimeoutMs: toMilliseconds('inFlightWaitTimeout', options.inFlightWaitTimeout ?? '30s'),
    senderHorizonsMs: resolveSenders(options.senders ?? {}),
    purge,
    health: resolveHealth(options.health ?? {}, purge),
  };
}

const MAX_PURGE_BATCH_SIZE = 100_000;

function resolveSenders(senders: Record<string, SenderOptions>): Record<string, number> {
  if (typeof senders !== 'object' || senders === null || Array.isArray(senders)) {
    throw new IdempotencyOptionsError(messages.invalidSenders(senders));
  }
  return Object.fromEntries(
    Object.entries(senders).map(([sender, declared]) => [
      sender,
      toMilliseconds(`senders.${sender}.redeliveryHorizon`, declared?.redeliveryHorizon),
    ]),
  );
}

function resolvePurge(purge: PurgeOptions): ResolvedPurgeOptions {
  const interval = purge.interval ?? '1m';
  const batchSize = purge.batchSize ?? 5000;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_PURGE_BATCH_SIZE) {
    throw new IdempotencyOptionsError(messages.invalidBatchSize(batchSize, MAX_PURGE_BATCH_SIZE));
  }
  return { intervalMs: interval === false ? null : toMilliseconds('purge.interval', interval), batchSize };
}

function resolveHealth(health: HealthOptions, purge: ResolvedPurgeOptions): ResolvedHealthOptions {
  const maxDuplicateRate = health.maxDuplicateRate ?? 0.5;
  if (typeof maxDuplicateRate !== 'number' || !(maxDuplicateRate >= 0 && maxDuplicateRate <= 1)) {
    throw new IdempotencyOptionsError(messages.invalidDuplicateRate(maxDuplicateRate));
  }
  const duplicateRateMinDeliveries = health.duplicateRateMinDeliveries ?? 20;
  if (!isPositiveInteger(duplicateRateMinDeliveries)) {
    throw new IdempotencyOptionsError(messages.invalidCount('health.duplicateRateMinDeliveries', duplicateRateMinDeliveries));
  }
  const maxEstimatedRows = health.maxEstimatedRows ?? null;
  if (maxEstimatedRows !== null && !isPositiveInteger(maxEstimatedRows)) {
    throw new IdempotencyOptionsError(messages.invalidCount('health.maxEstimatedRows', maxEstimatedRows));
  }
  const maxPurgeLagMs = toMilliseconds('health.maxPurgeLag', health.maxPurgeLag ?? '1h');
  const maxTimeSincePurgeMs = toMilliseconds('health.maxTimeSincePurge', health.maxTimeSincePurge ?? '10m');
  for (const [name, thresholdMs] of [['maxPurgeLag', maxPurgeLagMs], ['maxTimeSincePurge', maxTimeSincePurgeMs]] as const) {
    if (purge.intervalMs !== null && thresholdMs <= purge.intervalMs) {
      throw new IdempotencyOptionsError(messages.thresholdWithinPurgeInterval(name, formatDuration(thresholdMs), formatDuration(purge.intervalMs)));
    }
  }
  return {
    maxPurgeLagMs,
    maxTimeSincePurgeMs: purge.intervalMs === null ? null : maxTimeSincePurgeMs,
    maxDuplicateRate,
    duplicateRateWindowMs: toMilliseconds('health.duplicateRateWindow', health.duplicateRateWindow ?? '5m'),
    duplicateRateMinDeliveries,
    maxEstimatedRows,
  };
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}
