import { type Duration, MAX_RETENTION_MS, MAX_TIMER_MS, toMilliseconds } from '../duration/duration.js';
import { toTableName } from '../data-layers/table-name.js';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { isPositiveInteger, toFlag } from '../options/option-values.js';
import { DEFAULT_OUTBOX_TABLE_NAME } from '../idempotency.constants.js';
import type { OutboxPublisher } from './outbox-publisher.js';
import { outboxMessages } from './outbox.messages.js';
import { OUTBOX_TABLE } from '../store/store.handle.js';

/** The relay's settings: how it wakes, how much it takes at once, how it retries. */
export interface OutboxRelayOptions {
  /**
   * Messages claimed and published at once by one relay (each batch is one transaction that holds
   * its rows while their publishes are confirmed).
   * @default 100
   */
  batchSize?: number;
  /**
   * Publishes of a batch waiting for the broker at once, apart from how many the batch holds:
   * lower it for a broker that throttles a burst, or a publisher that opens a request each.
   * @default `batchSize` (the whole batch at once)
   */
  concurrency?: number;
  /**
   * How often the relay looks for messages when nothing woke it: the fallback to LISTEN/NOTIFY.
   * A message whose publish failed is retried when its delay ends, not at the next poll.
   * @default '1s'
   */
  pollInterval?: Duration;
  /**
   * Whether the relay runs on its own from start-up (its poll, and LISTEN). `false`: it sends only
   * when `OutboxRelay.runOnce()` is called, for a cron-style worker or a test that drives it.
   * @default true
   */
  autoStart?: boolean;
  /**
   * Wake the relay at each commit that wrote messages, by PostgreSQL's LISTEN/NOTIFY on one pooled
   * connection it keeps. Turn it off behind a pooler in transaction mode (PgBouncer), where LISTEN
   * does not reach the relay: it then polls every `pollInterval`.
   * @default true
   */
  listen?: boolean;
  /**
   * Failed publishes of one message before it is parked as a dead letter (`OutboxAdmin.deadLetters()`).
   * @default 10
   */
  maxAttempts?: number;
  /**
   * Whether a dead letter holds back the later messages of its ordering key until it is requeued
   * or discarded (`IdempotencyAdmin`), so that a key's messages are never sent out of order. With
   * `false` the key's next message goes out once the dead letter is parked, as with
   * `@nestjs/outbox`: the key keeps flowing, and the dead letter, if requeued, arrives after messages
   * written after it.
   * @default true
   */
  deadLetterHoldsKey?: boolean;
  /** The delay before a failed message is tried again, doubled at each further failure up to `maxRetryDelay`. @default '1s' */
  retryDelay?: Duration;
  /** @default '5m' */
  maxRetryDelay?: Duration;
  /**
   * How long one publish may wait for the broker's confirmation before it counts as failed; the
   * publisher's `signal` is then aborted (the built-in publishers drop a message not sent yet).
   * @default '10s'
   */
  publishTimeout?: Duration;
}

/** The transactional outbox: `Outbox.publish()` writes in the transaction, the relay sends after it committed. */
export interface OutboxOptions {
  /**
   * The brokers messages are sent to, by the name a message gives as `to`.
   * @example `{ rabbitmq: new RabbitMqPublisher({ urls: [process.env.AMQP_URL] }) }`
   */
  publishers: Record<string, OutboxPublisher>;
  /**
   * The outbox table, created by `CreateOutboxMessagesTable1796428800000` (or the shipped SQL).
   * @default 'outbox_messages'
   */
  tableName?: string;
  /**
   * The relay of this process, or `false` where another process runs it (a producer that only
   * writes, beside a relay process of its own): several relays share the table safely.
   * @default {} (a relay with the defaults of `OutboxRelayOptions`)
   */
  relay?: OutboxRelayOptions | false;
  /**
   * How long a dispatched message is kept (for `IdempotencyAdmin` and your own queries) before the
   * scheduled purge deletes it.
   * @default '1d'
   */
  retention?: Duration;
}

/** @internal */
export interface ResolvedRelayOptions {
  readonly batchSize: number;
  readonly concurrency: number;
  readonly pollIntervalMs: number;
  readonly listen: boolean;
  readonly autoStart: boolean;
  readonly maxAttempts: number;
  readonly deadLetterHoldsKey: boolean;
  readonly retryDelayMs: number;
  readonly maxRetryDelayMs: number;
  readonly publishTimeoutMs: number;
}

/** @internal */
export interface ResolvedOutboxOptions {
  readonly publishers: ReadonlyMap<string, OutboxPublisher>;
  readonly tableName: string;
  /** null: no relay in this process. */
  readonly relay: ResolvedRelayOptions | null;
  readonly retentionMs: number;
}

/** The token of the outbox's resolved options, null when the module has no `outbox`. @internal */
export const OUTBOX_OPTIONS = Symbol('IDEMPOTENCY:OUTBOX_OPTIONS');

const MAX_BATCH_SIZE = 10_000;

/** @internal */
export function resolveOutbox(outbox: OutboxOptions | undefined): ResolvedOutboxOptions | null {
  if (outbox === undefined) {
    return null;
  }
  const publishers = new Map(Object.entries(outbox.publishers ?? {}));
  if (publishers.size === 0) {
    throw new IdempotencyOptionsError(outboxMessages.noPublishers());
  }
  for (const [name, publisher] of publishers) {
    if (typeof publisher?.publish !== 'function') {
      throw new IdempotencyOptionsError(outboxMessages.notAPublisher(name));
    }
  }
  return {
    publishers,
    tableName: toTableName(outbox.tableName ?? DEFAULT_OUTBOX_TABLE_NAME, 'outbox.tableName'),
    relay: outbox.relay === false ? null : resolveRelay(outbox.relay ?? {}),
    retentionMs: toMilliseconds('outbox.retention', outbox.retention ?? '1d', MAX_RETENTION_MS),
  };
}

function resolveRelay(relay: OutboxRelayOptions): ResolvedRelayOptions {
  const batchSize = wholeNumber('outbox.relay.batchSize', relay.batchSize ?? 100, MAX_BATCH_SIZE);
  const maxAttempts = wholeNumber('outbox.relay.maxAttempts', relay.maxAttempts ?? 10, 1000);
  const retryDelayMs = toMilliseconds('outbox.relay.retryDelay', relay.retryDelay ?? '1s', MAX_TIMER_MS);
  const maxRetryDelayMs = toMilliseconds('outbox.relay.maxRetryDelay', relay.maxRetryDelay ?? '5m', MAX_TIMER_MS);
  if (maxRetryDelayMs < retryDelayMs) {
    throw new IdempotencyOptionsError(outboxMessages.retryDelays(retryDelayMs, maxRetryDelayMs));
  }
  return {
    batchSize,
    concurrency: wholeNumber('outbox.relay.concurrency', relay.concurrency ?? batchSize, MAX_BATCH_SIZE),
    pollIntervalMs: toMilliseconds('outbox.relay.pollInterval', relay.pollInterval ?? '1s', MAX_TIMER_MS),
    listen: toFlag('outbox.relay.listen', relay.listen ?? true),
    autoStart: toFlag('outbox.relay.autoStart', relay.autoStart ?? true),
    maxAttempts,
    deadLetterHoldsKey: toFlag('outbox.relay.deadLetterHoldsKey', relay.deadLetterHoldsKey ?? true),
    retryDelayMs,
    maxRetryDelayMs,
    publishTimeoutMs: toMilliseconds('outbox.relay.publishTimeout', relay.publishTimeout ?? '10s', MAX_TIMER_MS),
  };
}

function wholeNumber(name: string, value: unknown, max: number): number {
  if (!isPositiveInteger(value) || value > max) {
    throw new IdempotencyOptionsError(outboxMessages.notWholeNumber(name, value, max));
  }
  return value;
}

/** Provides the store handle's `OUTBOX_TABLE` from the outbox's options. @internal */
export const outboxTableProvider = {
  provide: OUTBOX_TABLE,
  useFactory: (outbox: ResolvedOutboxOptions | null) => outbox?.tableName ?? null,
  inject: [OUTBOX_OPTIONS],
};
