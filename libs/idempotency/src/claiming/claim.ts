import type { ClaimConnection, TransactionStatements } from '../data-layers/data-layer.js';
import type { IsolationLevel } from '../options/handler-values.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';

/**
 * What is claimed: one message for one consumer, and how to wait for a twin of it.
 * @internal
 */
export interface ClaimRequest {
  readonly consumer: string;
  /**
   * The consumer's default name before 0.3.0 (`Class.method`) while the store holds ids under it:
   * a row under it counts as taken too, and is replayed. Read from the store once, at start-up.
   */
  readonly formerConsumer: string | undefined;
  /** The message id as stored: the client's key, or for a scoped handler the scope's digest and the key. */
  readonly key: string;
  /** The key as the client sent it, when `key` is scoped; what `IdempotencyContext.key` answers. */
  readonly clientKey?: string;
  readonly sender: string;
  /** SHA-256 of what identifies the operation; a duplicate with another fingerprint is a reused key. Null: not compared. */
  readonly fingerprint: string | null;
  readonly retentionMs: number;
  /** `wait`: a delivery whose twin is in flight waits for it, up to the module's `inFlightWaitTimeout`. */
  readonly waitForTwin: boolean;
  /** Unset: the data source's default, else READ COMMITTED. */
  readonly isolationLevel: IsolationLevel | undefined;
  /**
   * Transactional mode: take a savepoint right after the claim, so that an error answer can be
   * committed with the claim and without the handler's writes (`recordErrors`).
   */
  readonly savepoint: boolean;
  /** `run()` in the caller's own transaction: the claim joins it, and the caller commits it. */
  readonly callerTransaction?: TransactionStatements;
  /**
   * `run()` inside an idempotent handler: the handler's claim, in whose transaction
   * `callerTransaction` runs; the work's writes through the data layer join it, as the handler's do.
   */
  readonly handlerClaim?: ClaimConnection;
}

/** The response recorded with a processed claim and replayed to its duplicates. */
export interface RecordedResponse {
  /** The HTTP status; null for message handlers. */
  readonly status: number | null;
  /** The HTTP headers the handler's pipeline set, by name in the casing it was sent with (lower-case in older rows); null for message handlers. */
  readonly headers: Readonly<Record<string, string | string[]>> | null;
  /** The body's bytes as sent (HTTP), or the reply as JSON (messages); null for none. */
  readonly body: Buffer | null;
}

/**
 * How a delivery commits.
 * @internal
 */
export interface CommitOptions {
  /** Roll the handler's writes back to the savepoint taken after the claim, and commit the claim and its record alone. */
  readonly undoWork?: boolean;
}

/**
 * A delivery that won its claim (transactional mode) or its lease (lease mode) and has not settled
 * yet: run the handler under it, then commit the response to record, or roll it back. Settles
 * once; later calls do nothing.
 * @internal
 */
export interface OpenDelivery {
  /**
   * Whether `rollback()` undoes what the handler did along with the claim (the transactional mode,
   * whose work is in the claim's transaction), or the claim only (lease mode, whose handler's
   * effects are elsewhere and stay): a handler that succeeded must then be completed, whether or
   * not anyone is left to receive its answer.
   */
  readonly rollbackUndoesWork: boolean;
  /** Runs `handle` with the claim reachable through `IdempotencyContext`. */
  run<T>(handle: () => Promise<T>): Promise<T>;
  /**
   * Records `response` and completes the message; throws when it cannot (nothing is then recorded).
   * With `undoWork` (an error answer under `recordErrors`; transactional mode, whose claim took a
   * savepoint), the handler's writes are rolled back to that savepoint first, and only the claim
   * and its record commit.
   * @returns true when this call settled the delivery, false when an earlier call had.
   */
  commit(response: RecordedResponse, options?: CommitOptions): Promise<boolean>;
  /**
   * Undoes the claim, so the next delivery processes; `outcome` is how this delivery ended.
   * @returns true when this call settled the delivery, false when an earlier call had.
   */
  rollback(outcome: Exclude<DeliveryOutcome, 'processed' | 'duplicate'>): Promise<boolean>;
}

/**
 * How a claim ended: this delivery won it and must now run the handler, or a twin had processed the message.
 * @internal
 */
export type ClaimOutcome =
  | { readonly kind: 'claimed'; readonly claim: OpenDelivery }
  | { readonly kind: 'duplicate'; readonly response: RecordedResponse };
