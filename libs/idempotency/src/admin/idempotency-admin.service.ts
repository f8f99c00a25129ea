import { Inject, Injectable } from '@nestjs/common';
import { IdempotencyAdminError } from '../errors/idempotency.errors.js';
import { adminMessages } from './admin.messages.js';
import { RECORDING_OPTIONS, type ResolvedRecordingOptions } from '../recording/recording.options.js';
import { StoreHandle } from '../store/store.handle.js';
import { toMessageKey, toScope } from '../keys/message-key.js';
import { ANONYMOUS_SCOPE, scopedMessageId } from '../keys/scoped-key.js';
import type { LeaseKey, LeaseStore } from '../leasing/lease-store.js';
import { LeaseStores, POSTGRES_STORE } from '../leasing/lease-stores.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import { errorMessages } from '../errors/error.messages.js';
import type { UnreadableReason } from '../errors/idempotency.errors.js';
import { openResponse, sealingKeyId, UnreadableRecord } from '../recording/response-seal.js';
import { ReplayCache } from '../replay-cache/replay-cache.js';
import { audit, listLimit, requireReason } from './admin-audit.js';
import { type AdminOutboxActionOptions, type AdminOutboxListOptions, type AdminOutboxLookupOptions, type AdminOutboxMessage, OutboxAdmin } from './outbox-admin.service.js';

/** What the store holds of a key: completed, held by a live lease, held by a lease that expired, or nothing. */
export type AdminKeyState = 'processed' | 'leased' | 'lease-expired' | 'not-found';

/** One message of one consumer, as an operator names it. */
export interface AdminKeyQuery {
  /** The consumer name as stored (`POST /payments`, a message pattern, or the handler's `consumer`). */
  readonly consumer: string;
  /** The key as the client or sender sent it. */
  readonly key: string;
  /**
   * For a handler with a `scope`: the caller's identity its scope function answers (`user.id`),
   * or `null` for a record of an anonymous caller (one for whom it answered nothing).
   */
  readonly scope?: string | number | null;
  /**
   * The lease store: `'postgres'` (the processed-messages table, where every transactional claim
   * lives) or a name of the module's `stores`.
   * @default 'postgres'
   */
  readonly store?: string;
  /** Who asks, for the audit line (an operator's name, a ticket). @default '(unnamed operator)' */
  readonly actor?: string;
}

/** `lookup()`'s options. */
export interface AdminLookupOptions extends AdminKeyQuery {
  /**
   * Also return the recorded headers and body (they may hold personal data), opened with the
   * module's `encryption.keys` when they were sealed.
   * @default false
   */
  readonly includeBody?: boolean;
}

/** Why `lookup({ includeBody: true })` could not open a sealed record; its headers and body are then returned as null. */
export interface AdminUnreadableResponse {
  /** As `IdempotencyRecordUnreadableError.reason`: `'unknown-key'`, `'no-encryption'`, `'not-authentic'` or `'unknown-format'`. */
  readonly reason: UnreadableReason;
  /** What happened and what to do, for the operator. */
  readonly message: string;
}

/** `forget()`'s options. */
export interface AdminForgetOptions extends AdminKeyQuery {
  /** Why: required, logged in the audit line. */
  readonly reason: string;
  /** Delete a live lease too (its handler may still be running and then complete nothing). @default false */
  readonly force?: boolean;
}

/** `release()`'s options. */
export interface AdminReleaseOptions extends AdminKeyQuery {
  /** Why: required, logged in the audit line. */
  readonly reason: string;
  /** Release only while this token holds the lease (a fencing token from `lookup()`). @default any holder */
  readonly token?: string;
}

/** `list()`'s options. */
export interface AdminListOptions {
  readonly consumer: string;
  /** How many records, at most 1000. @default 50 */
  readonly limit?: number;
  /** Only records processed before this moment (to page back: the last `processedAt` of a page). */
  readonly before?: Date;
  readonly actor?: string;
}

/** What the store holds of one key. Times are null where the store keeps none (Redis keeps no sender or processing time). */
export interface AdminKeyRecord {
  readonly state: AdminKeyState;
  readonly consumer: string;
  /** The message id as stored (for a scoped key: the scope's SHA-256, a separator, the key). */
  readonly messageId: string;
  readonly sender: string | null;
  readonly processedAt: Date | null;
  /** When the id is forgotten (purged, or expired in Redis). */
  readonly expiresAt: Date | null;
  readonly leaseToken: string | null;
  readonly leaseExpiresAt: Date | null;
  readonly responseStatus: number | null;
  /** Size of the recorded body in bytes as stored (sealed, with the headers inside, when encryption sealed it); null when none was recorded. */
  readonly responseBytes: number | null;
  /** Only with `includeBody`: the recorded headers, opened when sealed; null when none were recorded or the record cannot be opened. */
  readonly responseHeaders?: Readonly<Record<string, string | string[]>> | null;
  /** Only with `includeBody`: the recorded body, opened when sealed; null when none was recorded or the record cannot be opened. */
  readonly responseBody?: Buffer | null;
  /** Only with `includeBody`: the id (in `encryption.keys`) of the key that sealed the record; null when it is stored in plaintext. */
  readonly sealedWith?: string | null;
  /** Only with `includeBody`: why the sealed record cannot be opened; null when its headers and body are returned. */
  readonly unreadable?: AdminUnreadableResponse | null;
}

/** What `forget()` did. */
export interface AdminForgetResult {
  /** The key's state before. */
  readonly state: AdminKeyState;
  readonly forgotten: boolean;
}

interface StoredRow {
  consumer: string;
  message_id: string;
  sender: string;
  processed_at: Date;
  expires_at: Date;
  lease_token: string | null;
  lease_expires_at: Date | null;
  lease_expired: boolean | null;
  response_status: number | null;
  response_bytes: number | null;
  response_headers?: Record<string, string | string[]> | null;
  response_body?: Buffer | null;
}

/**
 * For operators, on stuck and wrong work: look up a key, forget a processed key so that its next
 * delivery runs again, release a held lease, and list a consumer's newest records. It has no HTTP
 * routes: expose it behind the application's own authentication, or call it from a script through
 * `IdempotencyAdminModule`, which starts no consumer (never an application context of the service's
 * `AppModule`, which does). Every call is logged (context `Idempotency`) with its
 * actor and reason; forgets and releases are counted (`IdempotencyMetricsService.adminActions()`).
 *
 * The processed-messages table serves every action. A lease store of the module's `stores` serves
 * `lookup`, `forget` and `release` when it has the optional `inspect()` and `remove()`
 * (`RedisLeaseStore` has them); `list` reads the table only. The outbox's dead letters have their
 * own service, `OutboxAdmin`.
 *
 * The replay cache (the module's `replayCache`) is per process: `forget` and `release` drop the
 * key's cached response in the process that calls them only. Another instance replays it until its
 * entry expires (`replayCache.maxAge`), unless `evictCached()` is called there too (from the
 * application's own broadcast, say), or the cache is off. A row deleted by SQL is the same.
 */
@Injectable()
export class IdempotencyAdmin {
  /** @internal Nest constructs it. */
  constructor(
    private readonly store: StoreHandle,
    @Inject(RECORDING_OPTIONS) private readonly recording: ResolvedRecordingOptions,
    private readonly stores: LeaseStores,
    private readonly metrics: IdempotencyMetricsService,
    private readonly cache: ReplayCache,
    private readonly outbox: OutboxAdmin,
  ) {}

  /**
   * What the store holds of a key; the recorded body and headers only with `includeBody`, opened
   * with the module's `encryption.keys` when they were sealed (`sealedWith` names the key). A
   * sealed record that no configured key opens is returned without headers and body, and
   * `unreadable` says why: never its sealed bytes.
   */
  async lookup(query: AdminLookupOptions): Promise<AdminKeyRecord> {
    const id = messageIdOf(query);
    const includeBody = query.includeBody === true;
    const stored = await this.read(query, id, includeBody);
    const record = includeBody ? this.opened(stored) : stored;
    const sealing = record.unreadable ? `, its response unreadable (${record.unreadable.reason})` : record.sealedWith ? `, its response sealed with '${record.sealedWith}'` : '';
    audit('lookup', query.consumer, id, query.actor, undefined, `${record.state}${sealing}`);
    return record;
  }

  /**
   * Forgets a key so that its next delivery runs the handler again (after a wrong answer was
   * recorded, say). A live lease is refused unless `force`: its handler may still be running. An
   * in-flight transactional claim is not visible to anyone before its commit: it reads as
   * `not-found`, and forgetting it does nothing.
   * @throws IdempotencyAdminError without a `reason`, or on a live lease without `force`.
   */
  async forget(options: AdminForgetOptions): Promise<AdminForgetResult> {
    const id = messageIdOf(options);
    const reason = requireReason('IdempotencyAdmin.forget', options.reason, options.consumer, id);
    const found = await this.read(options, id, false);
    if (found.state === 'leased' && options.force !== true) {
      audit('forget', options.consumer, id, options.actor, reason, 'refused, the lease is live');
      throw new IdempotencyAdminError(adminMessages.adminLiveLease(options.consumer, id, found.leaseExpiresAt ?? new Date()), options.consumer, id);
    }
    let forgotten = false;
    if (found.state !== 'not-found') {
      const store = this.storeOf(options);
      if (store) {
        forgotten = await this.removable(store, options.store as string, 'forget').remove({ consumer: options.consumer, key: id }, options.force ? 'any' : 'completed');
      } else {
        const { rowCount } = await this.store.query(this.store.dialect.admin.adminForgetSql(this.store.table), [options.consumer, id, options.force === true]);
        forgotten = rowCount === 1;
      }
    }
    this.cache.forget({ consumer: options.consumer, key: id });
    if (forgotten) {
      this.metrics.recordAdminAction(options.consumer, 'forget');
    }
    audit('forget', options.consumer, id, options.actor, reason, forgotten ? `forgotten (was ${found.state})` : `nothing forgotten (${found.state})`);
    return { state: found.state, forgotten };
  }

  /**
   * Releases a held lease (live or expired), so that the next delivery takes the message at once;
   * with `token`, only while that token holds it. A completed message is left as it is.
   * @returns whether a lease was released.
   * @throws IdempotencyAdminError without a `reason`.
   */
  async release(options: AdminReleaseOptions): Promise<boolean> {
    const id = messageIdOf(options);
    const reason = requireReason('IdempotencyAdmin.release', options.reason, options.consumer, id);
    const key: LeaseKey = { consumer: options.consumer, key: id };
    const store = this.storeOf(options);
    let released: boolean;
    if (store && options.token !== undefined) {
      released = await store.release(key, options.token);
    } else if (store) {
      released = await this.removable(store, options.store as string, 'release').remove(key, 'leased');
    } else {
      const { rowCount } = await this.store.query(this.store.dialect.admin.adminReleaseSql(this.store.table), [options.consumer, id, options.token ?? null]);
      released = rowCount === 1;
    }
    this.cache.forget(key);
    if (released) {
      this.metrics.recordAdminAction(options.consumer, 'release');
    }
    audit('release', options.consumer, id, options.actor, reason, released ? 'released' : 'no lease held');
    return released;
  }

  /**
   * Drops the key's response from this process's replay cache, so that its next delivery here
   * reads the store; the store is left as it is. For the instances that did not delete the record
   * themselves: after a `forget()` on another instance, or a row deleted by SQL.
   * @returns whether this process had the key's response cached.
   */
  evictCached(query: AdminKeyQuery): boolean {
    const id = messageIdOf(query);
    const evicted = this.cache.forget({ consumer: query.consumer, key: id });
    audit('evictCached', query.consumer, id, query.actor, undefined, evicted ? 'evicted from this process' : 'not cached in this process');
    return evicted;
  }

  /**
   * The newest records of a consumer in the processed-messages table, newest first by
   * `processedAt`, without bodies. It reads the consumer's rows through the primary key and sorts
   * them (a top-N sort, no index on `processed_at`): the cost grows with the consumer's row count
   * (on 100,000 rows: 11 ms when they belong to ten consumers; 120 ms, a scan of the table, when
   * all are one consumer's). An operator's tool, not for a request path.
   */
  async list(options: AdminListOptions): Promise<AdminKeyRecord[]> {
    const limit = listLimit('IdempotencyAdmin.list', options.limit, options.consumer);
    const { rows } = await this.store.query<StoredRow>(this.store.dialect.admin.adminListSql(this.store.table, limit), [options.consumer, options.before ?? null]);
    audit('list', options.consumer, undefined, options.actor, undefined, `${rows.length} records`);
    return rows.map((row) => fromRow(row, false));
  }

  /** @deprecated Use `OutboxAdmin.deadLetters()`, which takes the same options. */
  outboxDeadLetters(options?: AdminOutboxListOptions): Promise<AdminOutboxMessage[]> {
    return this.outbox.deadLetters(options);
  }

  /** @deprecated Use `OutboxAdmin.deadLetter()`, which takes the same options. */
  outboxDeadLetter(options: AdminOutboxLookupOptions): Promise<AdminOutboxMessage | null> {
    return this.outbox.deadLetter(options);
  }

  /** @deprecated Use `OutboxAdmin.requeue()`, which takes the same options. */
  requeueDeadLetters(options: AdminOutboxActionOptions): Promise<string[]> {
    return this.outbox.requeue(options);
  }

  /** @deprecated Use `OutboxAdmin.discard()`, which takes the same options. */
  discardDeadLetters(options: AdminOutboxActionOptions): Promise<string[]> {
    return this.outbox.discard(options);
  }

  private async read(query: AdminKeyQuery, id: string, includeBody: boolean): Promise<AdminKeyRecord> {
    const store = this.storeOf(query);
    if (store) {
      const entry = await this.removable(store, query.store as string, 'lookup').inspect({ consumer: query.consumer, key: id });
      const body = entry?.response?.body ?? null;
      return {
        state: !entry ? 'not-found' : entry.leaseToken === null ? 'processed' : 'leased',
        consumer: query.consumer,
        messageId: id,
        sender: null,
        processedAt: null,
        expiresAt: entry && entry.leaseToken === null ? entry.expiresAt : null,
        leaseToken: entry?.leaseToken ?? null,
        leaseExpiresAt: entry && entry.leaseToken !== null ? entry.expiresAt : null,
        responseStatus: entry?.response?.status ?? null,
        responseBytes: body === null ? null : body.length,
        ...(includeBody ? { responseHeaders: entry?.response?.headers ?? null, responseBody: body } : {}),
      };
    }
    const {
      rows: [row],
    } = await this.store.query<StoredRow>(this.store.dialect.admin.adminLookupSql(this.store.table, includeBody), [query.consumer, id]);
    if (!row) {
      const none = { sender: null, processedAt: null, expiresAt: null, leaseToken: null, leaseExpiresAt: null, responseStatus: null, responseBytes: null };
      return { state: 'not-found', consumer: query.consumer, messageId: id, ...none };
    }
    return fromRow(row, includeBody);
  }

  /** A record read with its body, its headers and body opened when they were sealed. */
  private opened(record: AdminKeyRecord): AdminKeyRecord {
    const stored = { status: record.responseStatus, headers: record.responseHeaders ?? null, body: record.responseBody ?? null };
    const { keyring } = this.recording;
    const opened = openResponse(keyring, { consumer: record.consumer, key: record.messageId }, stored);
    if (opened instanceof UnreadableRecord) {
      const cause = errorMessages.unreadableCause(opened.reason, opened.keyId, opened.formatVersion, [...(keyring?.keys.keys() ?? [])]);
      const message = adminMessages.adminResponseUnreadable(record.consumer, record.messageId, cause);
      return { ...record, responseHeaders: null, responseBody: null, sealedWith: opened.keyId, unreadable: { reason: opened.reason, message } };
    }
    return { ...record, responseHeaders: opened.headers, responseBody: opened.body, sealedWith: sealingKeyId(stored), unreadable: null };
  }

  /** The lease store named by `query`; undefined for the processed-messages table. */
  private storeOf(query: AdminKeyQuery): LeaseStore | undefined {
    const name = query.store ?? POSTGRES_STORE;
    if (name === POSTGRES_STORE) {
      return undefined;
    }
    if (!this.stores.names().includes(name)) {
      throw new IdempotencyAdminError(adminMessages.adminUnknownStore(name, this.stores.names()), query.consumer, query.key);
    }
    return this.stores.get(name);
  }

  private removable(store: LeaseStore, name: string, action: string): Required<Pick<LeaseStore, 'inspect' | 'remove'>> {
    if (typeof store.inspect !== 'function' || typeof store.remove !== 'function') {
      throw new IdempotencyAdminError(adminMessages.adminStoreCannot(name, action), '', '');
    }
    return store as Required<Pick<LeaseStore, 'inspect' | 'remove'>>;
  }
}

/** The stored id of a query's key: validated as a delivery's key is, and scoped as its handler scopes it. */
function messageIdOf({ key, scope }: AdminKeyQuery): string {
  const checked = toMessageKey(key, 'the key given to IdempotencyAdmin');
  if (scope === undefined) {
    return checked;
  }
  return scopedMessageId(checked, scope === null ? ANONYMOUS_SCOPE : toScope(scope, 'the scope given to IdempotencyAdmin'));
}

function fromRow(row: StoredRow, includeBody: boolean): AdminKeyRecord {
  return {
    state: row.lease_token === null ? 'processed' : row.lease_expired ? 'lease-expired' : 'leased',
    consumer: row.consumer,
    messageId: row.message_id,
    sender: row.sender,
    processedAt: row.processed_at,
    expiresAt: row.expires_at,
    leaseToken: row.lease_token,
    leaseExpiresAt: row.lease_expires_at,
    responseStatus: row.response_status,
    responseBytes: row.response_bytes === null ? null : Number(row.response_bytes),
    ...(includeBody ? { responseHeaders: row.response_headers ?? null, responseBody: row.response_body ?? null } : {}),
  };
}
