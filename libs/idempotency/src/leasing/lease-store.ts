import type { RecordedResponse } from '../claiming/claim.js';

/** One message for one consumer, as a lease store knows it. */
export interface LeaseKey {
  readonly consumer: string;
  readonly key: string;
}

/** What a delivery asks of a lease store when it claims. */
export interface LeaseRequest extends LeaseKey {
  readonly sender: string;
  /** SHA-256 of what identifies the operation; null: not compared. */
  readonly fingerprint: string | null;
  /** How long the lease holds before another delivery may take it over. */
  readonly leaseMs: number;
  /** How long a completed message is remembered. */
  readonly retentionMs: number;
}

/**
 * What a claim found:
 * - `claimed`: this delivery holds the lease under `token` (a new message, or a lease whose holder
 *   let it expire: `tookOver`);
 * - `completed`: a twin completed the message; its recorded response;
 * - `leased`: a twin holds a lease that has not expired (or one with another fingerprint).
 */
export type LeaseAttempt =
  | { readonly kind: 'claimed'; readonly tookOver: boolean }
  | { readonly kind: 'completed'; readonly fingerprint: string | null; readonly response: RecordedResponse }
  | { readonly kind: 'leased'; readonly fingerprint: string | null };

/** What a store holds of one message, as `IdempotencyAdmin` reads it. */
export interface StoredLeaseEntry {
  /** The holder's token while leased; null once completed. */
  readonly leaseToken: string | null;
  /** When the lease or, once completed, the memory of the message expires. */
  readonly expiresAt: Date | null;
  readonly fingerprint: string | null;
  /** The recorded response once completed; null while leased. */
  readonly response: RecordedResponse | null;
}

/** Which entry of a message `LeaseStore.remove` may delete. */
export type RemovableEntry = 'completed' | 'leased' | 'any';

/**
 * A store of leases, for handlers in `mode: 'lease'`: each operation is atomic in the store, and
 * every one after the claim succeeds only while `token` still holds the lease (a fencing token: a
 * holder whose lease was taken over can no longer complete, release or extend it). The module
 * ships one on PostgreSQL (the processed-messages table) and `RedisLeaseStore`; the contract a
 * store must meet is `leaseStoreContract()` of `nestjs-idempotent-consumer/testing`.
 */
export interface LeaseStore {
  /** Takes the lease of a new message, or of one whose lease expired, under `token`; else says what holds it. */
  claim(request: LeaseRequest, token: string): Promise<LeaseAttempt>;
  /** Records `response`, ends the lease and keeps the message `retentionMs`; false when `token` no longer holds it. */
  complete(request: LeaseRequest, token: string, response: RecordedResponse): Promise<boolean>;
  /** Forgets the message, so that its next delivery processes it; false when `token` no longer holds it. */
  release(key: LeaseKey, token: string): Promise<boolean>;
  /** Moves the lease's expiry to `leaseMs` from now; false when `token` no longer holds it. */
  extend(key: LeaseKey, token: string, leaseMs: number): Promise<boolean>;
  /** Optional, for `IdempotencyAdmin`: what the store holds of the message, if anything. */
  inspect?(key: LeaseKey): Promise<StoredLeaseEntry | undefined>;
  /**
   * Optional, for `IdempotencyAdmin`: deletes the message's entry when it is `which` (a completed
   * message, a lease whoever holds it, or either); false when there was none such.
   */
  remove?(key: LeaseKey, which: RemovableEntry): Promise<boolean>;
}
