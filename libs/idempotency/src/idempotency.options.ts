import type { ExecutionContext } from '@nestjs/common';
import { createSecretKey, type KeyObject } from 'node:crypto';
import { DEFAULT_TABLE_NAME } from './idempotency.constants.js';
import { type Duration, formatDuration, MAX_RETENTION_MS, MAX_TIMER_MS, toMilliseconds } from './duration/duration.js';
import { IdempotencyOptionsError } from './errors/idempotency-options.error.js';
import { discoveryMessages } from './discovery/discovery.messages.js';
import { healthMessages } from './health/health.messages.js';
import { joinMessages } from './joining/join.messages.js';
import { keyMessages } from './keys/key.messages.js';
import { leaseMessages } from './leasing/lease.messages.js';
import { metricsMessages } from './metrics/metrics.messages.js';
import { optionValueMessages } from './options/option-values.messages.js';
import { purgeMessages } from './purge/purge.messages.js';
import { recordingMessages } from './recording/recording.messages.js';
import { schemaMessages } from './schema/schema.messages.js';
import { tracingMessages } from './tracing/tracing.messages.js';
import { httpMessages } from './transports/http/http.messages.js';
import type { LeaseStore } from './leasing/lease-store.js';
import type { RecordPolicy } from './decorators/idempotent-handler.options.js';
import type { Keyring } from './recording/response-seal.js';

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
   * The caller's identity that scopes the keys of every handler keyed by the client's
   * `Idempotency-Key` header (HTTP) and setting no `scope` of its own: a function of the execution
   * context, run after guards. A handler opts out with `scope: false`. Handlers keyed by a webhook
   * body, a message header or a function are not scoped by it.
   * @default none: keys are shared by every caller of a handler
   * @example `scope: (context) => context.switchToHttp().getRequest().user?.id`
   */
  scope?: (context: ExecutionContext) => string | number | undefined;
  /**
   * How long a delivery whose handler uses `inFlight: 'wait'` waits for its twin to finish before
   * it is answered as in flight (409) or requeued after all. It waits without holding a pooled
   * connection.
   * @default '30s'
   */
  inFlightWaitTimeout?: Duration;
  /**
   * How long a delivery waits for a connection from the data source's pool. Past it the delivery
   * is answered 503 with `Retry-After` (HTTP) or retried after a delay (RabbitMQ), and counted as
   * `unavailable`.
   * @default '5s'
   */
  connectionTimeout?: Duration;
  /**
   * The senders whose redelivery horizon is known, by the name handlers give in `sender`. At
   * start-up the module refuses to start when a handler of a declared sender keeps its ids for less
   * than the sender's horizon; a handler with a `sender` function is checked against the longest.
   * @default {} (no sender declared, nothing checked)
   * @example `{ payments: { redeliveryHorizon: '3d' } }`
   */
  senders?: Record<string, SenderOptions>;
  /** What of an HTTP response is recorded and replayed to its duplicates. */
  replay?: ReplayOptions;
  /**
   * What is recorded of a handler's answer for its duplicates, for handlers that set no `record`:
   * `'response'` (the status, the headers and the body; a message handler's reply) or `'status'`
   * (the HTTP status only: a duplicate gets it with an empty body; a message handler's duplicate
   * gets no reply). See `RecordPolicy`.
   * @default 'response'
   */
  record?: RecordPolicy;
  /**
   * Encrypts the recorded responses at rest (AES-256-GCM): each one's headers and body are sealed
   * together, with a random IV, under `keys[current]`, and the key id is stored with the record.
   * Records sealed with an older key stay readable while its id is in `keys`; records written in
   * plaintext (before this option was set) stay readable too. A record that no configured key
   * can open is never replayed: IdempotencyRecordUnreadableError (HTTP 500).
   * @default none: responses are recorded as they were sent
   * @example `{ keys: { '2025-06': process.env.IDEMPOTENCY_KEY_2025_06 }, current: '2025-06' }`
   */
  encryption?: EncryptionOptions;
  /** The scheduled purge of expired ids. */
  purge?: PurgeOptions;
  /** Thresholds of `IdempotencyHealthIndicator`; each one crossed turns the indicator down. */
  health?: HealthOptions;
  /** Where the delivery and purge counters are registered for Prometheus. */
  metrics?: MetricsOptions;
  /**
   * One OpenTelemetry span per delivery when `@opentelemetry/api` is installed (an optional peer),
   * and the `node:diagnostics_channel` events of `IDEMPOTENCY_CHANNELS`. `false` turns the spans
   * off (the channels publish only to their subscribers, whatever this says).
   * @default `{ recordKey: false }` (spans when `@opentelemetry/api` is installed, without the key)
   */
  tracing?: TracingOptions | false;
  /**
   * Lease stores besides the built-in `'postgres'` (the processed-messages table), by name, for
   * handlers in `mode: 'lease'`: `RedisLeaseStore`, or a store of your own that passes
   * `leaseStoreContract()` of `nestjs-idempotent-consumer/testing`.
   * @default {}
   * @example `{ redis: new RedisLeaseStore(redisClient) }`
   */
  stores?: Record<string, LeaseStore>;
  /**
   * The store of handlers that set none: `'postgres'` or a name of `stores`. The transactional
   * mode claims in the handler's PostgreSQL transaction, so its handlers need `'postgres'`.
   * @default 'postgres'
   */
  store?: string;
  /**
   * At start-up, warn when the processed-messages table holds ids of consumer names that no
   * handler of this application claims (a renamed `consumer`, a removed handler): their
   * redeliveries would be processed again. One bounded index scan. Turn it off where several
   * applications share the table.
   * @default true
   */
  warnOnUnusedConsumers?: boolean;
}

/**
 * The keys that seal recorded responses. To rotate: add the new key, make it `current`, restart
 * every instance; remove the old key once the records it sealed have expired (the longest
 * retention after the rotation), since records it sealed cannot be replayed without it.
 */
export interface EncryptionOptions {
  /**
   * Every key that may open a record, by key id (1 to 64 letters, digits, `.`, `_`, `:`, `-`;
   * stored with each record): 32 bytes, as a Buffer or as base64 text (`openssl rand -base64 32`).
   */
  keys: Record<string, Buffer | Uint8Array | string>;
  /** The id of the key in `keys` that seals new records. */
  current: string;
}

/** What the module knows about one sender. */
export interface SenderOptions {
  /**
   * How long after its first attempt the sender may still redeliver a message (Stripe: `'3d'`;
   * Shopify: `'4h'`). Every handler of this sender must keep ids at least this long.
   */
  redeliveryHorizon: Duration;
}

/**
 * What is recorded of a successful HTTP response, to replay it to duplicates: its status, its body
 * as the client received it (after serializers and interceptors), and the headers set while the
 * request was handled (by the handler, its interceptors and Nest), named in the casing they were
 * sent with, without `Set-Cookie`, `Date`, `Connection`, `Keep-Alive` and `Transfer-Encoding`, and
 * without those listed in `excludeHeaders`. A replay carries the `Content-Length` of the recorded
 * body, never chunked framing (and so does the first answer). Headers set before the handler (by
 * middleware, such as CORS) are set anew for each request, duplicates included.
 */
export interface ReplayOptions {
  /**
   * The largest response body recorded, in bytes. A larger response is not sent: the claim and the
   * work roll back and the request is answered 500, naming this option.
   * @default 1048576 (1 MiB)
   */
  maxBodyBytes?: number;
  /**
   * Response headers never recorded nor replayed, besides the ones above (case-insensitive), for
   * headers that describe one request rather than the operation, e.g. `['x-request-id']`.
   * @default []
   */
  excludeHeaders?: string[];
}

/** Options of the scheduled purge. */
export interface PurgeOptions {
  /**
   * How often this instance purges expired ids. `false` turns the timer off, for instances that
   * should never purge; `IdempotencyPurgeService.purgeNow()` still works.
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

/** What the spans and diagnostics-channel events carry. */
export interface TracingOptions {
  /**
   * Put the idempotency key on the span (`idempotency.key`, and `messaging.message.id` for
   * messages) and in the diagnostics-channel messages. Keys can be sensitive (an email address,
   * an order number a client chose), so they are left out unless this says otherwise.
   * @default false
   */
  recordKey?: boolean;
}

/**
 * The module's options with defaults applied and durations in milliseconds.
 * @internal
 */
export interface ResolvedIdempotencyOptions {
  dataSource: string | undefined;
  tableName: string;
  retentionMs: number;
  scope: ((context: ExecutionContext) => string | number | undefined) | undefined;
  inFlightWaitTimeoutMs: number;
  connectionTimeoutMs: number;
  /** Redelivery horizon of each declared sender, in milliseconds. */
  senderHorizonsMs: Record<string, number>;
  replay: ResolvedReplayOptions;
  purge: ResolvedPurgeOptions;
  health: ResolvedHealthOptions;
  /** undefined: prom-client's default registry if it is installed. */
  metricsRegistry: MetricsRegistry | false | undefined;
  /** null: the store's gauges are never sampled. */
  storeSampleIntervalMs: number | null;
  tracing: ResolvedTracingOptions;
  stores: Readonly<Record<string, LeaseStore>>;
  store: string;
  warnOnUnusedConsumers: boolean;
  /** The default of handlers that set no `record`. */
  record: RecordPolicy;
  /** null: responses are recorded in plaintext. */
  keyring: Keyring | null;
}

/**
 * `tracing` with its defaults applied.
 * @internal
 */
export interface ResolvedTracingOptions {
  /** False: no spans, even with `@opentelemetry/api` installed. */
  spans: boolean;
  recordKey: boolean;
}

/**
 * `replay` with its defaults applied.
 * @internal
 */
export interface ResolvedReplayOptions {
  maxBodyBytes: number;
  /** Lower-cased names of the headers never recorded, the fixed ones included. */
  excludedHeaders: ReadonlySet<string>;
}

/**
 * `purge` with its defaults applied.
 * @internal
 */
export interface ResolvedPurgeOptions {
  /** null when the timer is off. */
  intervalMs: number | null;
  batchSize: number;
}

/**
 * `health` with its defaults applied and durations in milliseconds.
 * @internal
 */
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

/** At most 56 characters: `<table>_record`, the longest name the module derives, must fit PostgreSQL's 63. */
const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,55}$/;

/** Headers that describe one response on one connection, or one client: never recorded. */
const NEVER_RECORDED_HEADERS = ['set-cookie', 'date', 'connection', 'keep-alive', 'transfer-encoding'];

const MAX_PURGE_BATCH_SIZE = 100_000;

/** The largest `replay.maxBodyBytes`: 64 MiB, far below PostgreSQL's 1 GB per value. */
const MAX_REPLAY_BODY_BYTES = 64 * 1024 * 1024;

/**
 * Applies the defaults and validates; the one place where defaults live.
 * @internal
 */
export function resolveModuleOptions(options: IdempotencyModuleOptions = {}): ResolvedIdempotencyOptions {
  const tableName = options.tableName ?? DEFAULT_TABLE_NAME;
  if (!PLAIN_IDENTIFIER.test(tableName)) {
    throw new IdempotencyOptionsError(schemaMessages.invalidTableName(options.tableName));
  }
  if (options.dataSource !== undefined && (typeof options.dataSource !== 'string' || options.dataSource === '')) {
    throw new IdempotencyOptionsError(joinMessages.invalidDataSource(options.dataSource));
  }
  const purge = resolvePurge(options.purge ?? {});
  return {
    dataSource: options.dataSource,
    tableName,
    retentionMs: toMilliseconds('retention', options.retention ?? '7d', MAX_RETENTION_MS),
    scope: resolveScope('scope', options.scope),
    inFlightWaitTimeoutMs: toMilliseconds('inFlightWaitTimeout', options.inFlightWaitTimeout ?? '30s', MAX_TIMER_MS),
    connectionTimeoutMs: toMilliseconds('connectionTimeout', options.connectionTimeout ?? '5s', MAX_TIMER_MS),
    senderHorizonsMs: resolveSenders(options.senders ?? {}),
    replay: resolveReplay(options.replay ?? {}),
    purge,
    health: resolveHealth(options.health ?? {}, purge),
    metricsRegistry: resolveMetricsRegistry(options.metrics ?? {}),
    storeSampleIntervalMs: resolveSampleInterval(options.metrics?.storeSampleInterval ?? '1m'),
    tracing: resolveTracing(options.tracing ?? {}),
    stores: resolveStores(options.stores ?? {}),
    store: options.store ?? 'postgres',
    warnOnUnusedConsumers: toFlag('warnOnUnusedConsumers', options.warnOnUnusedConsumers ?? true),
    record: toRecordPolicy('record', options.record ?? 'response'),
    keyring: options.encryption === undefined ? null : resolveKeyring(options.encryption),
  };
}

/**
 * The choices of `record`.
 * @internal
 */
export const RECORD_POLICIES: readonly RecordPolicy[] = ['response', 'status'];

/**
 * `value` as a record policy. @throws IdempotencyOptionsError naming `name`.
 * @internal
 */
export function toRecordPolicy(name: string, value: unknown): RecordPolicy {
  if (!RECORD_POLICIES.includes(value as RecordPolicy)) {
    throw new IdempotencyOptionsError(optionValueMessages.invalidChoice(name, value, RECORD_POLICIES));
  }
  return value as RecordPolicy;
}

const KEY_ID = /^[A-Za-z0-9._:-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;
const AES_256_KEY_BYTES = 32;

function resolveKeyring(encryption: EncryptionOptions): Keyring {
  const { keys, current } = (encryption ?? {}) as Partial<EncryptionOptions>;
  if (typeof keys !== 'object' || keys === null || Array.isArray(keys)) {
    throw new IdempotencyOptionsError(recordingMessages.invalidEncryption());
  }
  const resolved = new Map<string, KeyObject>();
  for (const [keyId, key] of Object.entries(keys)) {
    if (!KEY_ID.test(keyId)) {
      throw new IdempotencyOptionsError(recordingMessages.invalidEncryptionKeyId(keyId));
    }
    resolved.set(keyId, toAesKey(keyId, key));
  }
  if (resolved.size === 0) {
    throw new IdempotencyOptionsError(recordingMessages.noEncryptionKeys());
  }
  if (typeof current !== 'string' || !resolved.has(current)) {
    throw new IdempotencyOptionsError(recordingMessages.unknownCurrentKey(current, [...resolved.keys()]));
  }
  return { current, keys: resolved };
}

/** A 256-bit key from a Buffer or base64 text; the error says what was given without showing it. */
function toAesKey(keyId: string, key: unknown): KeyObject {
  let bytes: Buffer;
  if (key instanceof Uint8Array) {
    bytes = Buffer.from(key);
  } else if (typeof key === 'string') {
    if (!BASE64.test(key)) {
      throw new IdempotencyOptionsError(recordingMessages.invalidEncryptionKey(keyId, `a string of ${key.length} characters that is not base64`));
    }
    bytes = Buffer.from(key, 'base64');
  } else {
    throw new IdempotencyOptionsError(recordingMessages.invalidEncryptionKey(keyId, key === undefined || key === null ? String(key) : `a ${typeof key}`));
  }
  if (bytes.length !== AES_256_KEY_BYTES) {
    throw new IdempotencyOptionsError(recordingMessages.invalidEncryptionKey(keyId, `${bytes.length} bytes`));
  }
  return createSecretKey(bytes);
}

function resolveScope(name: string, scope: unknown): ResolvedIdempotencyOptions['scope'] {
  if (scope !== undefined && typeof scope !== 'function') {
    throw new IdempotencyOptionsError(keyMessages.invalidScope(name, scope));
  }
  return scope as ResolvedIdempotencyOptions['scope'];
}

function resolveStores(stores: Record<string, LeaseStore>): Record<string, LeaseStore> {
  for (const [name, store] of Object.entries(stores)) {
    const operations = ['claim', 'complete', 'release', 'extend'] as const;
    if (name === 'postgres' || !operations.every((operation) => typeof (store as Partial<LeaseStore>)?.[operation] === 'function')) {
      throw new IdempotencyOptionsError(leaseMessages.invalidStore(name));
    }
  }
  return stores;
}

function resolveSenders(senders: Record<string, SenderOptions>): Record<string, number> {
  if (typeof senders !== 'object' || senders === null || Array.isArray(senders)) {
    throw new IdempotencyOptionsError(discoveryMessages.invalidSenders(senders));
  }
  return Object.fromEntries(
    Object.entries(senders).map(([sender, declared]) => [
      sender,
      toMilliseconds(`senders.${sender}.redeliveryHorizon`, declared?.redeliveryHorizon, MAX_RETENTION_MS),
    ]),
  );
}

function resolveReplay(replay: ReplayOptions): ResolvedReplayOptions {
  const maxBodyBytes = replay.maxBodyBytes ?? 1024 * 1024;
  if (!isPositiveInteger(maxBodyBytes) || maxBodyBytes > MAX_REPLAY_BODY_BYTES) {
    throw new IdempotencyOptionsError(httpMessages.invalidBodyLimit(maxBodyBytes, MAX_REPLAY_BODY_BYTES));
  }
  const excludeHeaders = replay.excludeHeaders ?? [];
  if (!Array.isArray(excludeHeaders) || !excludeHeaders.every((name) => typeof name === 'string' && name !== '')) {
    throw new IdempotencyOptionsError(httpMessages.invalidExcludedHeaders(excludeHeaders));
  }
  return {
    maxBodyBytes,
    excludedHeaders: new Set([...NEVER_RECORDED_HEADERS, ...excludeHeaders.map((name) => name.toLowerCase())]),
  };
}

function resolvePurge(purge: PurgeOptions): ResolvedPurgeOptions {
  const interval = purge.interval ?? '1m';
  const batchSize = purge.batchSize ?? 5000;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_PURGE_BATCH_SIZE) {
    throw new IdempotencyOptionsError(purgeMessages.invalidBatchSize(batchSize, MAX_PURGE_BATCH_SIZE));
  }
  return { intervalMs: interval === false ? null : toMilliseconds('purge.interval', interval, MAX_TIMER_MS), batchSize };
}

function resolveHealth(health: HealthOptions, purge: ResolvedPurgeOptions): ResolvedHealthOptions {
  const maxDuplicateRate = health.maxDuplicateRate ?? 0.5;
  if (typeof maxDuplicateRate !== 'number' || !(maxDuplicateRate >= 0 && maxDuplicateRate <= 1)) {
    throw new IdempotencyOptionsError(healthMessages.invalidDuplicateRate(maxDuplicateRate));
  }
  const duplicateRateMinDeliveries = health.duplicateRateMinDeliveries ?? 20;
  if (!isPositiveInteger(duplicateRateMinDeliveries)) {
    throw new IdempotencyOptionsError(optionValueMessages.invalidCount('health.duplicateRateMinDeliveries', duplicateRateMinDeliveries));
  }
  const maxEstimatedRows = health.maxEstimatedRows ?? null;
  if (maxEstimatedRows !== null && !isPositiveInteger(maxEstimatedRows)) {
    throw new IdempotencyOptionsError(optionValueMessages.invalidCount('health.maxEstimatedRows', maxEstimatedRows));
  }
  const maxPurgeLagMs = toMilliseconds('health.maxPurgeLag', health.maxPurgeLag ?? '1h', MAX_RETENTION_MS);
  const maxTimeSincePurgeMs = toMilliseconds('health.maxTimeSincePurge', health.maxTimeSincePurge ?? '10m', MAX_RETENTION_MS);
  for (const [name, thresholdMs] of [['maxPurgeLag', maxPurgeLagMs], ['maxTimeSincePurge', maxTimeSincePurgeMs]] as const) {
    if (purge.intervalMs !== null && thresholdMs <= purge.intervalMs) {
      throw new IdempotencyOptionsError(healthMessages.thresholdWithinPurgeInterval(name, formatDuration(thresholdMs), formatDuration(purge.intervalMs)));
    }
  }
  return {
    maxPurgeLagMs,
    maxTimeSincePurgeMs: purge.intervalMs === null ? null : maxTimeSincePurgeMs,
    maxDuplicateRate,
    duplicateRateWindowMs: toMilliseconds('health.duplicateRateWindow', health.duplicateRateWindow ?? '5m', MAX_TIMER_MS),
    duplicateRateMinDeliveries,
    maxEstimatedRows,
  };
}

function resolveMetricsRegistry(metrics: MetricsOptions): MetricsRegistry | false | undefined {
  const { registry } = metrics;
  if (registry !== undefined && registry !== false && typeof (registry as MetricsRegistry)?.registerMetric !== 'function') {
    throw new IdempotencyOptionsError(metricsMessages.invalidMetricsRegistry());
  }
  return registry;
}

function resolveSampleInterval(interval: Duration | false): number | null {
  return interval === false ? null : toMilliseconds('metrics.storeSampleInterval', interval, MAX_TIMER_MS);
}

function resolveTracing(tracing: TracingOptions | false): ResolvedTracingOptions {
  if (tracing === false) {
    return { spans: false, recordKey: false };
  }
  if (typeof tracing !== 'object' || tracing === null) {
    throw new IdempotencyOptionsError(tracingMessages.invalidTracing(tracing));
  }
  return { spans: true, recordKey: toFlag('tracing.recordKey', tracing.recordKey ?? false) };
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

function toFlag(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') {
    throw new IdempotencyOptionsError(optionValueMessages.invalidFlag(name, value));
  }
  return value;
}
