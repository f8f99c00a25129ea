import { IdempotencyInFlightError } from '../errors/idempotency-in-flight.error.js';
import { IdempotencyKeyReusedError } from '../errors/idempotency-key-reused.error.js';
import { IdempotencyKeyError } from '../errors/idempotency-key.error.js';

/**
 * How one delivery to an idempotent handler ended:
 * - `processed`: the handler ran and committed with the claim;
 * - `duplicate`: a twin had already been processed; its response was replayed;
 * - `failed`: the handler threw, or the database aborted the transaction (nothing committed);
 * - `rejected`: refused before the handler ran: no usable key (400), the key reused with another
 *   payload (422), or a twin still in flight (409).
 */
export type DeliveryOutcome = 'processed' | 'duplicate' | 'failed' | 'rejected';

/** The outcome of a delivery that ended with `error`. */
export function failureOutcome(error: unknown): Extract<DeliveryOutcome, 'failed' | 'rejected'> {
  return error instanceof IdempotencyKeyError || error instanceof IdempotencyKeyReusedError || error instanceof IdempotencyInFlightError
    ? 'rejected'
    : 'failed';
}
