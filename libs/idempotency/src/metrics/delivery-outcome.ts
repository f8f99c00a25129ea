import { HttpException } from '@nestjs/common';
import { IdempotencyInFlightError } from '../errors/idempotency-in-flight.error.js';
import { IdempotencyKeyReusedError } from '../errors/idempotency-key-reused.error.js';
import { IdempotencyKeyError } from '../errors/idempotency-key.error.js';
import { IdempotencyUnavailableError } from '../errors/idempotency-unavailable.error.js';

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
export type DeliveryOutcome = 'processed' | 'duplicate' | 'rejected' | 'unavailable' | 'failed';

/**
 * Every outcome, in the order the counters list them.
 * @internal
 */
export const DELIVERY_OUTCOMES: readonly DeliveryOutcome[] = ['processed', 'duplicate', 'rejected', 'unavailable', 'failed'];

/**
 * The outcome of a delivery that ended with `error`.
 * @internal
 */
export function failureOutcome(error: unknown): Exclude<DeliveryOutcome, 'processed' | 'duplicate'> {
  if (error instanceof IdempotencyUnavailableError) {
    return 'unavailable';
  }
  if (error instanceof IdempotencyKeyError || error instanceof IdempotencyKeyReusedError || error instanceof IdempotencyInFlightError) {
    return 'rejected';
  }
  return error instanceof HttpException && isClientError(error.getStatus()) ? 'rejected' : 'failed';
}

/**
 * The outcome of an HTTP response answered with an error status.
 * @internal
 */
export function statusOutcome(status: number): Extract<DeliveryOutcome, 'rejected' | 'failed'> {
  return isClientError(status) ? 'rejected' : 'failed';
}

function isClientError(status: number): boolean {
  return status >= 400 && status < 500;
}
