import type { FailureOutcome } from '../errors/delivery-error-classes.js';

/**
 * How one delivery to an idempotent handler ended:
 * - `processed`: the handler ran and committed with the claim;
 * - `duplicate`: a twin had already been processed; its response was replayed;
 * - `rejected`: refused as the sender's mistake, nothing committed: no usable key or sender (400),
 *   the key reused with another payload (422), a twin still in flight (409), or a client error
 *   (4xx) answered by the handler, its pipes or its interceptors (validation, say);
 * - `unavailable`: no pooled connection within `connectionTimeout`, or no database (503);
 * - `failed`: the handler threw, or the database aborted the transaction (nothing committed).
 */
export type DeliveryOutcome = 'processed' | 'duplicate' | FailureOutcome;

/**
 * Every outcome, in the order the counters list them.
 * @internal
 */
export const DELIVERY_OUTCOMES: readonly DeliveryOutcome[] = ['processed', 'duplicate', 'rejected', 'unavailable', 'failed'];
