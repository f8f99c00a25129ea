/** The request header that carries the idempotency key by default. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** The response header set to `true` on every replayed response. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

/** The processed-messages table's name unless `tableName` says otherwise. */
export const DEFAULT_TABLE_NAME = 'processed_messages';

/** The outbox table's name unless `outbox.tableName` says otherwise. */
export const DEFAULT_OUTBOX_TABLE_NAME = 'outbox_messages';

/** The table of the Kafka consumers' positions, with `kafkaOffsets: true`. */
export const KAFKA_OFFSETS_TABLE_NAME = 'kafka_offsets';

/** The longest accepted idempotency key, in characters (Unicode code points, as PostgreSQL's `varchar(255)` counts them). */
export const MAX_KEY_LENGTH = 255;

/**
 * The `node:diagnostics_channel` channels the module publishes on, for tools that are not
 * OpenTelemetry. Each message is a small plain object (see "Tracing" on the guide's page docs/operations.md); the
 * key is in it only with `tracing: { recordKey: true }`. Nothing is built when no one subscribes.
 *
 * @example
 * ```ts
 * import { subscribe } from 'node:diagnostics_channel';
 * subscribe(IDEMPOTENCY_CHANNELS.duplicate, (message) => logger.log(message));
 * ```
 */
export const IDEMPOTENCY_CHANNELS = {
  /** A delivery won its claim (or its lease): `{ consumer, sender, mode, waitMs, key? }`. */
  claim: 'nestjs-idempotent-consumer:claim',
  /** A delivery found its message processed and was answered with the recorded response: `{ consumer, sender, waitMs, key? }`. */
  duplicate: 'nestjs-idempotent-consumer:duplicate',
  /** A claim committed with the handler's work: `{ consumer, sender, claimToCommitMs, key? }`. */
  commit: 'nestjs-idempotent-consumer:commit',
  /** A purge run ended: `{ outcome, rows, batches, durationMs }`. */
  purge: 'nestjs-idempotent-consumer:purge',
  /**
   * A delivery was refused as the sender's mistake, which no retry cures: a missing or invalid key
   * (`code: 'IDEMPOTENCY_INVALID_KEY'`), or a key reused with another payload
   * (`'IDEMPOTENCY_KEY_REUSED'`): `{ consumer, sender, code, key? }` (no key when it could not be read).
   */
  rejected: 'nestjs-idempotent-consumer:rejected',
  /**
   * Lease mode: a holder's lease expired and another delivery took the message over, so its result
   * was not recorded: `{ consumer, sender, heldMs?, leaseMs?, renewLeaseForMs?, key? }` (the times
   * when known: how long it held the lease, the handler's `lease` and `renewLeaseFor`).
   */
  leaseLost: 'nestjs-idempotent-consumer:lease-lost',
  /**
   * The outbox relay settled a message, after the COMMIT that marked it: `{ event: 'published' }`,
   * `'failed'` (retried in `retryInMs`) or `'dead-lettered'`, with `{ id, destination, address, attempt }`,
   * and `error` for a failure.
   */
  outbox: 'nestjs-idempotent-consumer:outbox',
} as const;
