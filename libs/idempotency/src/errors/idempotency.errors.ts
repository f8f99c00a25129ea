import { errorMessages } from './error.messages.js';

/** The base class of every error this library throws, so callers can `instanceof` any of them. */
export class IdempotencyError extends Error {
  override readonly name: string = 'IdempotencyError';
}

/** The message has no usable idempotency key (missing, empty, too long, control characters). HTTP 400. */
export class IdempotencyKeyError extends IdempotencyError {
  override readonly name = 'IdempotencyKeyError';

  /** @param source Where the key was looked for, e.g. `the Idempotency-Key header`. */
  constructor(
    message: string,
    readonly source: string,
  ) {
    super(message);
  }
}

/** The key was processed before with a different payload. HTTP 422. */
export class IdempotencyKeyReusedError extends IdempotencyError {
  override readonly name = 'IdempotencyKeyReusedError';

  constructor(
    readonly consumer: string,
    readonly key: string,
  ) {
    super(errorMessages.keyReused(key));
  }
}

/** A twin of the message holds the claim and has not committed yet. HTTP 409 with `Retry-After`. */
export class IdempotencyInFlightError extends IdempotencyError {
  override readonly name = 'IdempotencyInFlightError';

  constructor(
    readonly consumer: string,
    readonly key: string,
  ) {
    super(errorMessages.inFlight(key));
  }
}

/**
 * `@IdempotentHandler()` is on a handler whose answer cannot be recorded and replayed (an `@Sse()`
 * stream, a GraphQL query), or outside an HTTP controller, a message handler and a GraphQL
 * resolver (a WebSocket gateway). Thrown at start-up, naming the handler; the application does not start.
 */
export class IdempotencyUnsupportedHandlerError extends IdempotencyError {
  override readonly name = 'IdempotencyUnsupportedHandlerError';

  /** @param handler The handler, as `Class.method`. */
  constructor(
    message: string,
    readonly handler: string,
  ) {
    super(message);
  }
}

/**
 * Thrown when `IdempotencyContext` is read outside an `@IdempotentHandler()`, or for what the
 * handler's mode does not have (a claim transaction in lease mode, a lease in the transactional mode).
 */
export class IdempotencyContextError extends IdempotencyError {
  override readonly name = 'IdempotencyContextError';

  constructor(message = errorMessages.noActiveClaim()) {
    super(message);
  }
}

/**
 * The handler tried to end or change the claim's transaction, which belongs to
 * `@IdempotentHandler()`: it called `commitTransaction()`, `rollbackTransaction()` or `release()`
 * on the claim's query runner, sent a bare `COMMIT`/`ROLLBACK`, or asked a nested transaction for
 * a stronger isolation level than the claim's. Nothing is recorded as processed. HTTP 500.
 */
export class IdempotencyClaimTransactionError extends IdempotencyError {
  override readonly name = 'IdempotencyClaimTransactionError';

  constructor(
    message: string,
    readonly consumer: string,
    readonly key: string,
  ) {
    super(message);
  }
}

/**
 * PostgreSQL aborted the claim's transaction: a statement of the handler failed and the handler
 * carried on (it caught the error), so COMMIT could only roll back. Nothing was committed, the
 * claim included; the delivery fails (HTTP 500; RabbitMQ: retried). Wrap statements that may
 * fail in a transaction of the data layer nested in the handler's (`manager.transaction()`,
 * `db.transaction()`, `$transaction()`), a savepoint, to carry on after their failure.
 */
export class IdempotencyTransactionAbortedError extends IdempotencyError {
  override readonly name = 'IdempotencyTransactionAbortedError';

  constructor(
    readonly consumer: string,
    readonly key: string,
    options?: ErrorOptions,
  ) {
    super(errorMessages.transactionAborted(consumer, key), options);
  }
}

/**
 * PostgreSQL refused the COMMIT for a constraint checked at the commit (SQLSTATE class 23): most
 * often an outbox message whose id is taken by a message another transaction committed (the table
 * keeps each id once), or a deferred constraint of the handler's writes. Nothing was committed, the
 * claim included; the same delivery meets the same refusal. HTTP 500; a broker message is retried,
 * then dead-lettered.
 */
export class IdempotencyCommitRefusedError extends IdempotencyError {
  override readonly name = 'IdempotencyCommitRefusedError';

  /** @param reason What PostgreSQL said, with its detail (`Key (id)=(...) already exists.`). */
  constructor(
    readonly consumer: string,
    readonly key: string,
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(errorMessages.commitRefused(consumer, key, reason), options);
  }
}

/**
 * The database rolled the transaction back for a reason a retry cures (serialization failure,
 * deadlock, a claim purged while being read). Nothing was committed. HTTP 503 with `Retry-After`.
 */
export class IdempotencyTransientError extends IdempotencyError {
  override readonly name = 'IdempotencyTransientError';

  constructor(
    message: string,
    readonly consumer: string,
    readonly key: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * The database gave no connection in time: the pool stayed busy for the module's
 * `connectionTimeout`, or the server could not be reached; nothing was claimed. Or the claim's
 * connection was lost while its handler ran; nothing was committed. HTTP 503 with `Retry-After`;
 * a message: retried after a delay.
 */
export class IdempotencyUnavailableError extends IdempotencyError {
  override readonly name = 'IdempotencyUnavailableError';

  constructor(
    message: string,
    readonly consumer: string,
    readonly key: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * The answer recorded for the duplicates of a message whose response body was larger than the
 * module's `replay.maxBodyBytes`: the first delivery was answered in full and committed with its
 * work, but its body was not recorded, so its duplicates are answered 500 problem+json
 * `response-too-large` with `Idempotent-Replayed: true` (the handler is not run again). Raise the
 * limit, or answer with less (an id and a link to the content).
 */
export class IdempotencyResponseTooLargeError extends IdempotencyError {
  override readonly name = 'IdempotencyResponseTooLargeError';

  constructor(
    readonly consumer: string,
    readonly key: string,
    readonly maxBodyBytes: number,
    /** The status the first delivery was answered with. */
    readonly status: number,
    /** The size of the body it was answered with. */
    readonly bytes: number,
  ) {
    super(errorMessages.responseTooLarge(consumer, key, maxBodyBytes, status, bytes));
  }
}

/**
 * Why a sealed record cannot be opened:
 * - `no-encryption`: the module has no `encryption` option;
 * - `unknown-key`: its key id is not in `encryption.keys`;
 * - `not-authentic`: AES-GCM refused it (altered, moved from another consumer or key, or the
 *   configured key of that id is not the one that sealed it);
 * - `unknown-format`: written by a newer version of the module, or truncated.
 */
export type UnreadableReason = 'no-encryption' | 'unknown-key' | 'not-authentic' | 'unknown-format';

/**
 * A duplicate's recorded response is sealed (the module's `encryption` option) and no configured
 * key can open it: its key id is not in `encryption.keys` (`reason: 'unknown-key'`), the module
 * has no `encryption` option (`'no-encryption'`), AES-GCM refused it (`'not-authentic'`: altered,
 * moved from another message, or the key of that id holds other bytes), or it is in a format this
 * version does not read (`'unknown-format'`). The handler is not run again (the message was
 * processed) and nothing is replayed: HTTP answers 500 problem+json `record-unreadable`; a broker
 * message is retried, then dead-lettered. Put the key back in `encryption.keys` to replay it.
 */
export class IdempotencyRecordUnreadableError extends IdempotencyError {
  override readonly name = 'IdempotencyRecordUnreadableError';

  constructor(
    readonly consumer: string,
    readonly key: string,
    readonly reason: UnreadableReason,
    /** The key id the record was sealed with; null when its format could not be read. */
    readonly keyId: string | null,
    formatVersion: number,
    configuredKeyIds: readonly string[],
  ) {
    super(errorMessages.recordUnreadable(consumer, key, reason, keyId, formatVersion, configuredKeyIds));
  }
}

/**
 * How long a lease-mode handler held its lease, for the message of IdempotencyLeaseLostError.
 */
export interface LeaseHeld {
  /** From the claim to the refused completion (or extension). */
  readonly heldMs: number;
  /** The handler's `lease`. */
  readonly leaseMs: number;
  /** The handler's `renewLeaseFor`; 0: never renewed. */
  readonly renewLeaseForMs: number;
}

/**
 * Lease mode: the handler's lease expired and another delivery took the message over, so this
 * holder can no longer complete (or extend) it: its result is not recorded. HTTP 409 with
 * `Retry-After` (the retry gets the answer of the holder that took over); RabbitMQ: retried.
 * A lease that expired with nobody taking it over is no loss: its holder still completes.
 */
export class IdempotencyLeaseLostError extends IdempotencyError {
  override readonly name = 'IdempotencyLeaseLostError';

  constructor(
    readonly consumer: string,
    readonly key: string,
    /** How long the handler held the lease, when known. */
    readonly held?: LeaseHeld,
  ) {
    super(errorMessages.leaseLost(consumer, key, held));
  }
}

/** Thrown at start-up when the module's or a handler's options cannot work. */
export class IdempotencyOptionsError extends IdempotencyError {
  override readonly name = 'IdempotencyOptionsError';
}

/**
 * The processed-messages store lacks what this version of the module reads or writes: the table,
 * a column (or a column of an earlier shape), or one of the claim's functions; or the outbox table
 * (with an `outbox`) is missing or lacks a column. Thrown at start-up,
 * where the application does not start, and by a delivery whose claim finds a function gone
 * (dropped since the start), which HTTP answers 500 problem+json `store-schema` and a broker
 * retries. The message names what is missing, the migrations that create it, and how to recreate
 * a function whose migrations are recorded as run already.
 */
export class IdempotencySchemaError extends IdempotencyError {
  override readonly name = 'IdempotencySchemaError';

  /**
   * @param table The processed-messages table.
   * @param missing What is missing or of an earlier shape, one phrase each.
   * @param migrations The library's migrations that bring the store to the current shape.
   * @param options `droppedSinceStart`: found missing by a delivery, after the start-up check found it there;
   * `sqlFiles`: the application's data layer is not TypeORM, so the fix is named as the package's SQL files;
   * `outbox`: `table` is the outbox table; `kafkaOffsets`: the table of the Kafka consumers' positions;
   * `mariaDb`: the store is on MariaDB, whose migration or SQL file is named.
   */
  constructor(
    readonly table: string,
    readonly missing: readonly string[],
    readonly migrations: readonly string[],
    options?: ErrorOptions & { readonly droppedSinceStart?: boolean; readonly sqlFiles?: boolean; readonly outbox?: boolean; readonly kafkaOffsets?: boolean; readonly mariaDb?: boolean },
  ) {
    super(
      options?.outbox
        ? (options.mariaDb ? errorMessages.outboxSchemaMissingMariaDb : errorMessages.outboxSchemaMissing)(table, missing, options.sqlFiles === true)
        : options?.kafkaOffsets
        ? errorMessages.kafkaOffsetsSchemaMissing(table, options.sqlFiles === true)
        : options?.mariaDb
        ? errorMessages.schemaMissingMariaDb(table, missing, options.sqlFiles === true)
        : options?.droppedSinceStart
        ? errorMessages.functionDropped(table, missing)
        : options?.sqlFiles
          ? errorMessages.schemaMissingSql(table, missing, migrations)
          : errorMessages.schemaMissing(table, missing, migrations),
      options,
    );
  }
}

/** A duration written with its unit: `'500ms'`, `'30s'`, `'15m'`, `'72h'`, `'7d'`. */
export type Duration = `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

/**
 * A handler forgets message ids before its sender stops redelivering them, so a late redelivery
 * would be processed again. Thrown at start-up; the application does not start.
 */
export class IdempotencyRetentionError extends IdempotencyError {
  override readonly name = 'IdempotencyRetentionError';

  /**
   * @param handler The handler, as `Class.method`.
   * @param sender The sender whose horizon the retention falls short of.
   */
  constructor(
    message: string,
    readonly handler: string,
    readonly retention: Duration,
    readonly sender: string,
    readonly redeliveryHorizon: Duration,
  ) {
    super(message);
  }
}

/**
 * Two handlers claim the same consumer name, so each would take the other's processed ids for its
 * own and skip messages it never handled. Thrown at start-up; the application does not start.
 */
export class IdempotencyConsumerConflictError extends IdempotencyError {
  override readonly name = 'IdempotencyConsumerConflictError';

  /**
   * @param handlers The handlers that share the name, as `Class.method`.
   * @param formerNames Each handler's default name before 0.3.0 (`Class.method`), where it has one:
   * naming it so keeps the ids it processed under that name.
   */
  constructor(
    readonly consumer: string,
    readonly handlers: readonly string[],
    formerNames: readonly (string | undefined)[] = [],
  ) {
    super(errorMessages.consumerConflict(consumer, handlers, formerNames));
  }
}

/**
 * How a purge run ended:
 * - `purged`: this instance's batches held the purge lock and deleted every expired row they found
 *   (possibly none), or deleted some until another instance's batch took the lock, which carries on;
 * - `skipped`: another instance's batch held the purge lock when this run's first batch tried it;
 *   this run did nothing;
 * - `failed`: an error ended the run; the batches committed before it stay deleted.
 */
export type PurgeOutcome = 'purged' | 'skipped' | 'failed';

/** What one purge run did. */
export interface PurgeRun {
  readonly outcome: PurgeOutcome;
  /** Expired rows deleted. */
  readonly rows: number;
  /** Batches committed, each one statement in its own short transaction. */
  readonly batches: number;
  readonly startedAt: Date;
  readonly durationMs: number;
}

/**
 * A purge run failed; its cause is the database's error. The batches committed before the failure
 * stay deleted and the next run carries on.
 */
export class IdempotencyPurgeError extends IdempotencyError {
  override readonly name = 'IdempotencyPurgeError';

  /** @param run What the run did before it failed. */
  constructor(
    message: string,
    readonly run: PurgeRun,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * An `IdempotencyAdmin` action was refused: its input is incomplete (no `reason`, a bad key), it
 * would delete a live lease without `force`, or the store cannot do it. Nothing was changed.
 */
export class IdempotencyAdminError extends IdempotencyError {
  override readonly name = 'IdempotencyAdminError';

  constructor(
    message: string,
    readonly consumer: string,
    readonly key: string,
  ) {
    super(message);
  }
}

/**
 * `Outbox.publish()` refused a message: there is no transaction to write it in (outside an
 * idempotent handler, or in a lease-mode one, without `transaction`), the module has no `outbox`,
 * or the message is not valid. Nothing was written.
 */
export class IdempotencyOutboxError extends IdempotencyError {
  override readonly name = 'IdempotencyOutboxError';
}

/**
 * Thrown by an outbox publisher when a message can never be sent as it is (the broker refused it
 * for good: a payload too large, an address that cannot exist): the relay parks it as a dead
 * letter at once instead of retrying it up to `maxAttempts`. Any other rejection is retried.
 * @example
 * ```ts
 * if (body.length > MAX_BYTES) throw new IdempotencyPublishRefusedError(`${body.length} bytes, the broker takes ${MAX_BYTES}`);
 * ```
 */
export class IdempotencyPublishRefusedError extends IdempotencyError {
  override readonly name = 'IdempotencyPublishRefusedError';
}
