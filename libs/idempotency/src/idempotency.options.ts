import type { Provider } from '@nestjs/common';
import { CLAIM_OPTIONS, type ResolvedClaimOptions } from './claiming/claim.options.js';
import type { RecordPolicy } from './options/handler-values.js';
import { DISCOVERY_OPTIONS, resolveDiscovery, type ResolvedDiscoveryOptions, type SenderOptions } from './discovery/discovery.options.js';
import { type Duration, MAX_RETENTION_MS, MAX_TIMER_MS, toMilliseconds } from './duration/duration.js';
import { IdempotencyOptionsError } from './errors/idempotency.errors.js';
import { HEALTH_OPTIONS, type HealthOptions, resolveHealth, type ResolvedHealthOptions } from './health/health.options.js';
import type { IdempotencyDataLayer } from './data-layers/data-layer.js';
import { resolveStore, type ResolvedStoreOptions, STORE_OPTIONS } from './data-layers/store.options.js';
import type { KeyEntry, KeySource, ScopeSource } from './options/idempotent-handler.options.js';
import { keyMessages } from './keys/key.messages.js';
import { toKeySources } from './keys/message-key.js';
import { optionValueMessages } from './options/option-values.messages.js';
import { LEASE_OPTIONS, resolveLeasing, type ResolvedLeaseOptions } from './leasing/lease.options.js';
import type { LeaseStore } from './leasing/lease-store.js';
import { METRICS_OPTIONS, type MetricsOptions, resolveMetrics, type ResolvedMetricsOptions } from './metrics/metrics.options.js';
import { OUTBOX_OPTIONS, type OutboxOptions, resolveOutbox } from './outbox/outbox.options.js';
import { PURGE_OPTIONS, type PurgeOptions, type ResolvedPurgeOptions, resolvePurge } from './purge/purge.options.js';
import { type EncryptionOptions, RECORDING_OPTIONS, resolveKeyring, type ResolvedRecordingOptions, toRecordedErrors, toRecordPolicy } from './recording/recording.options.js';
import type { Keyring } from './recording/response-seal.js';
import { REPLAY_CACHE_OPTIONS, type ReplayCacheOptions, resolveReplayCache, type ResolvedReplayCacheOptions } from './replay-cache/replay-cache.options.js';
import { resolveTracing, type ResolvedTracingOptions, TRACING_OPTIONS, type TracingOptions } from './tracing/tracing.options.js';
import { RETRY_AFTER_SECONDS } from './transports/http/http.constants.js';
import { type ReplayOptions, type ResolvedReplayOptions, resolveReplay } from './transports/http/http.options.js';

/** A scope function: the caller's identity, from the execution context. */
export type ScopeFunction = Exclude<ScopeSource, false>;

/** The token of the resolved options. @internal */
export const RESOLVED_OPTIONS = Symbol('IDEMPOTENCY:RESOLVED_OPTIONS');

/** Options of `IdempotencyModule.forRoot()` / `forRootAsync()`. Every field is optional. */
export interface IdempotencyModuleOptions {
  /**
   * The data layer whose PostgreSQL database holds the processed-messages table and runs the
   * handlers' transactions: `new TypeOrmDataLayer()` (TypeORM), or `new PgPoolDataLayer({ pool })`
   * (plain `pg`, and Drizzle, Kysely or Prisma on a `pg` Pool).
   * @default new TypeOrmDataLayer(), on the default TypeORM data source
   */
  dataLayer?: IdempotencyDataLayer;
  /**
   * TypeORM: the name of the data source (as given to `TypeOrmModule.forRoot({ name })`) whose
   * PostgreSQL database holds the processed-messages table and runs the handlers' transactions.
   * The same as `dataLayer: new TypeOrmDataLayer({ dataSource })`; not with `dataLayer`.
   * @default the default data source
   */
  dataSource?: string;
  /**
   * The processed-messages table. Create it with the module's migrations (TypeORM: subclass them to
   * pass another name; other layers: the shipped SQL, `npx nestjs-idempotent-consumer-sql --table <name>`).
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
   * Where the handlers of each entry that set no `key` read their key: a `KeySource` or a list of
   * them tried in order, for `http` (controllers' routes), `graphql` (mutations) and `rpc`
   * (`@MessagePattern()` / `@EventPattern()` handlers). Checked at start-up. A handler's own `key`
   * replaces it.
   * @default none: each entry's own default (the `Idempotency-Key` header for HTTP and GraphQL, the
   * broker's message id for RPC; see the handler option `key`)
   * @example A GraphQL `idempotencyKey` argument, else the header:
   * `key: { graphql: [{ body: 'idempotencyKey' }, { header: 'Idempotency-Key' }] }`
   */
  key?: Partial<Record<KeyEntry, KeySource | readonly KeySource[]>>;
  /**
   * The caller's identity that scopes the keys of handlers that set no `scope` of their own: a
   * function of the execution context, run after guards. A function alone applies to the handlers
   * keyed by the client's `Idempotency-Key` header, over HTTP and GraphQL; per entry, `{ http,
   * graphql, rpc }`: `http` and `graphql` apply to those handlers of that entry, `rpc` to every
   * message handler (whose owner its payload names, a tenant id, say). Over HTTP, `undefined` or
   * `null` means a caller who is not signed in, whose keys share the anonymous callers' namespace;
   * a message whose scope answers nothing is refused. A handler opts out with `scope: false`.
   * Webhooks (keyed by a body field or a header of their own) are not scoped by it; over HTTP,
   * their fingerprint binds the caller it answers, so another caller's request with the same key is
   * answered 422, never the first caller's response.
   * @default none: keys are shared by every caller of a handler
   * @example `scope: (context) => context.switchToHttp().getRequest().user?.id`
   */
  scope?: ScopeFunction | Partial<Record<KeyEntry, ScopeFunction>>;
  /**
   * How long a delivery whose handler uses `inFlight: 'wait'` waits for its twin to finish before
   * it is answered as in flight (409) or requeued after all. It waits without holding a pooled
   * connection.
   * @default '30s'
   */
  inFlightWaitTimeout?: Duration;
  /**
   * HTTP and GraphQL: how long a client is told to wait before it retries a refusal that a retry
   * may settle (a twin in flight: 409; no connection in time: 503), for handlers that set no
   * `retryAfter`: the `Retry-After` header (GraphQL: `extensions.retryAfter`), in whole seconds
   * (rounded up).
   * @default '1s'
   */
  retryAfter?: Duration;
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
   * The client-error statuses (4xx) whose answer is recorded and replayed, for HTTP handlers in the
   * transactional mode that set no `recordErrors`: the handler's writes are rolled back to a
   * savepoint taken right after the claim, and the claim commits with the answer. A 5xx is refused
   * here at start-up: list it on the handler whose 5xx is final. Lease-mode and message handlers record no error.
   * @default [] (an error answer rolls the claim back with the work: a retry runs the handler again)
   * @example `recordErrors: [402]`
   */
  recordErrors?: number[];
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
  /**
   * Keeps the responses this process committed, or read from the store, in its memory, so that
   * their duplicates are answered without a round trip to the database or the lease store (the
   * fingerprint is still checked, the duplicate still logged and counted). Only what the store
   * committed is kept, never past its record's expiry nor past `maxAge`. It is per process: a
   * record deleted by SQL or by another instance's `IdempotencyAdmin` is still replayed here until
   * its entry expires (`maxAge`) or `IdempotencyAdmin.evictCached()` drops it in this process;
   * `forget()` and `release()` drop it in the process that calls them. `false` turns it off: every
   * duplicate reads the store.
   * @default `{ maxEntries: 10000, maxBytes: 16777216, maxAge: '1m' }`
   */
  replayCache?: ReplayCacheOptions | false;
  /**
   * The transactional outbox: `Outbox.publish()` writes messages in the handler's transaction and
   * the relay sends them after the commit, through these publishers. See `OutboxOptions`.
   * @default none: `Outbox.publish()` refuses
   */
  outbox?: OutboxOptions;
  /**
   * Kafka (`Transport.KAFKA`): writes each consumer group's position per partition in the claim's
   * transaction (the offset after the record, committed with the work), and seeks each partition
   * to it when the group assigns it, so a consumer killed between the claim's COMMIT and Kafka's
   * offset commit does not read the record again. Needs the table of
   * `CreateKafkaOffsetsTable1796515200000`; the module refuses to start without it.
   * @default false: Kafka's committed offsets alone, a record read again answered as a duplicate
   */
  kafkaOffsets?: boolean;
  /** The scheduled purge of expired ids (and of dispatched outbox messages past `outbox.retention`). */
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
   * handler of this application claims and `knownConsumers` does not list (a renamed `consumer`,
   * a removed handler): their redeliveries would be processed again. One bounded index scan.
   * @default true
   */
  warnOnUnusedConsumers?: boolean;
  /**
   * Consumer names claimed outside this application's handlers, which the start-up warning of
   * `warnOnUnusedConsumers` leaves out: the `consumer` of each `IdempotentRunner.run()` call,
   * and the consumers of other applications that share the table.
   * @default []
   * @example `['settle-day', 'ledger-import']`
   */
  knownConsumers?: readonly string[];
}

/**
 * The module's options with defaults applied and durations in milliseconds: each feature's slice,
 * resolved by its `*.options.ts`, and the module's own fields.
 * @internal
 */
export interface ResolvedIdempotencyOptions extends ResolvedStoreOptions, ResolvedDiscoveryOptions, ResolvedLeaseOptions {
  retentionMs: number;
  /** The `Retry-After` of handlers that set none, in seconds. */
  retryAfterSeconds: number;
  /** The key sources of the handlers of each entry that set none; absent: the entry's default. */
  key: Readonly<Partial<Record<KeyEntry, readonly KeySource[]>>>;
  /** The scope of the handlers of each entry that set none (`http` and `graphql`: those keyed by the client). */
  scope: Readonly<Partial<Record<KeyEntry, ScopeFunction>>>;
  inFlightWaitTimeoutMs: number;
  connectionTimeoutMs: number;
  replay: ResolvedReplayOptions;
  purge: ResolvedPurgeOptions;
  outbox: ReturnType<typeof resolveOutbox>;
  kafkaOffsets: boolean;
  health: ResolvedHealthOptions;
  metrics: ResolvedMetricsOptions;
  tracing: ResolvedTracingOptions;
  /** The default of handlers that set no `record`. */
  record: RecordPolicy;
  /** The default of HTTP handlers in the transactional mode that set no `recordErrors`. */
  recordErrors: ReadonlySet<number>;
  /** null: responses are recorded in plaintext. */
  keyring: Keyring | null;
  /** null: off. */
  replayCache: ResolvedReplayCacheOptions | null;
}

/**
 * Applies the defaults and validates: the module's own fields here, each feature's part through the
 * resolver of its `*.options.ts`, the one place where that part's defaults live.
 * @internal
 */
export function resolveModuleOptions(options: IdempotencyModuleOptions = {}): ResolvedIdempotencyOptions {
  const purge = resolvePurge(options.purge ?? {});
  return {
    ...resolveStore(options),
    ...resolveDiscovery(options.senders, options.warnOnUnusedConsumers, options.knownConsumers),
    ...resolveLeasing(options.stores, options.store),
    retentionMs: toMilliseconds('retention', options.retention ?? '7d', MAX_RETENTION_MS),
    retryAfterSeconds: toRetryAfterSeconds('retryAfter', options.retryAfter ?? `${RETRY_AFTER_SECONDS}s`),
    key: perEntry('key', options.key, toKeySources),
    scope: resolveScope(options.scope),
    inFlightWaitTimeoutMs: toMilliseconds('inFlightWaitTimeout', options.inFlightWaitTimeout ?? '30s', MAX_TIMER_MS),
    connectionTimeoutMs: toMilliseconds('connectionTimeout', options.connectionTimeout ?? '5s', MAX_TIMER_MS),
    replay: resolveReplay(options.replay ?? {}),
    purge,
    outbox: resolveOutbox(options.outbox),
    kafkaOffsets: options.kafkaOffsets ?? false,
    health: resolveHealth(options.health ?? {}, purge),
    metrics: resolveMetrics(options.metrics ?? {}),
    tracing: resolveTracing(options.tracing ?? {}),
    record: toRecordPolicy('record', options.record ?? 'response'),
    recordErrors: toRecordedErrors('recordErrors', options.recordErrors ?? [], false),
    keyring: options.encryption === undefined ? null : resolveKeyring(options.encryption),
    replayCache: resolveReplayCache(options.replayCache ?? {}),
  };
}

/**
 * The resolved options under `RESOLVED_OPTIONS`, resolved from the options given under `token`,
 * and each feature's slice of them under the token of its `*.options.ts`: a feature injects its
 * slice, never the whole.
 * @param moduleName The module the options were given to, for the error when there are none.
 * @param toModuleOptions What of the options under `token` are `IdempotencyModule` options.
 * @throws IdempotencyOptionsError when the options given are no object: a `forRootAsync()` factory that returned nothing.
 * @internal
 */
export function resolvedOptionsProviders<Given>(
  token: string,
  moduleName: string,
  toModuleOptions: (given: Given) => IdempotencyModuleOptions = (given) => given as IdempotencyModuleOptions,
): Provider[] {
  const slice = <Slice>(provide: symbol, of: (options: ResolvedIdempotencyOptions) => Slice): Provider => ({ provide, inject: [RESOLVED_OPTIONS], useFactory: of });
  const resolveGiven = (given: Given) => {
    if (given === null || typeof given !== 'object') {
      throw new IdempotencyOptionsError(optionValueMessages.optionsMissing(moduleName, given));
    }
    return resolveModuleOptions(toModuleOptions(given));
  };
  return [
    { provide: RESOLVED_OPTIONS, inject: [token], useFactory: resolveGiven },
    slice<ResolvedStoreOptions>(STORE_OPTIONS, ({ dataLayer, tableName }) => ({ dataLayer, tableName })),
    slice<ResolvedDiscoveryOptions>(DISCOVERY_OPTIONS, ({ senderHorizonsMs, warnOnUnusedConsumers, knownConsumers }) => ({
      senderHorizonsMs,
      warnOnUnusedConsumers,
      knownConsumers,
    })),
    slice<ResolvedLeaseOptions>(LEASE_OPTIONS, ({ stores, store }) => ({ stores, store })),
    slice(PURGE_OPTIONS, (options) => options.purge),
    slice(OUTBOX_OPTIONS, (options) => options.outbox),
    slice(HEALTH_OPTIONS, (options) => options.health),
    slice(METRICS_OPTIONS, (options) => options.metrics),
    slice(REPLAY_CACHE_OPTIONS, (options) => options.replayCache),
    slice<ResolvedClaimOptions>(CLAIM_OPTIONS, ({ tableName, inFlightWaitTimeoutMs, connectionTimeoutMs }) => ({ tableName, inFlightWaitTimeoutMs, connectionTimeoutMs })),
    slice(TRACING_OPTIONS, (options) => options.tracing),
    slice<ResolvedRecordingOptions>(RECORDING_OPTIONS, ({ keyring }) => ({ keyring })),
  ];
}

/**
 * A `retryAfter` in the whole seconds of a `Retry-After` header, rounded up.
 * @internal
 */
export function toRetryAfterSeconds(name: string, value: unknown): number {
  return Math.ceil(toMilliseconds(name, value, MAX_TIMER_MS) / 1000);
}

/** The module's scope per entry: a function alone scopes the client's keys, over HTTP and GraphQL. */
function resolveScope(scope: unknown): ResolvedIdempotencyOptions['scope'] {
  const given = typeof scope === 'function' ? { http: scope, graphql: scope } : scope;
  return perEntry('scope', given, (name, value) => {
    if (typeof value !== 'function') {
      throw new IdempotencyOptionsError(keyMessages.invalidScope(name, value));
    }
    return value as ScopeFunction;
  });
}

const KEY_ENTRIES: readonly KeyEntry[] = ['http', 'graphql', 'rpc'];

/** An option given per entry (`{ http, graphql, rpc }`), each value checked by `check`. */
function perEntry<T>(name: string, value: unknown, check: (name: string, value: unknown) => T): Partial<Record<KeyEntry, T>> {
  if (value === undefined) {
    return {};
  }
  const entries = value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.entries(value) : [];
  if (entries.length === 0 || entries.some(([entry]) => !KEY_ENTRIES.includes(entry as KeyEntry))) {
    throw new IdempotencyOptionsError(optionValueMessages.invalidPerEntry(name, value, KEY_ENTRIES));
  }
  const resolved: Partial<Record<KeyEntry, T>> = {};
  for (const [entry, each] of entries) {
    if (each !== undefined) {
      resolved[entry as KeyEntry] = check(`${name}.${entry}`, each);
    }
  }
  return resolved;
}
