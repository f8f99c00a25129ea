import { HttpException, HttpStatus } from '@nestjs/common';
import {
  IdempotencyClaimTransactionError,
  IdempotencyCommitRefusedError,
  IdempotencyInFlightError,
  IdempotencyKeyError,
  IdempotencyKeyReusedError,
  IdempotencyLeaseLostError,
  IdempotencyRecordUnreadableError,
  IdempotencyResponseTooLargeError,
  IdempotencySchemaError,
  IdempotencyTransactionAbortedError,
  IdempotencyTransientError,
  IdempotencyUnavailableError,
} from './idempotency.errors.js';
import type { IdempotencyError } from './idempotency.errors.js';

/**
 * How a delivery that did not go through ended (see `DeliveryOutcome`): `rejected` as the
 * sender's mistake, `unavailable` for want of the database, or `failed`.
 */
export type FailureOutcome = 'rejected' | 'unavailable' | 'failed';

/** How every transport treats one of the module's delivery errors. */
export interface DeliveryErrorClass {
  /** How the delivery ended, for the metrics. */
  readonly outcome: FailureOutcome;
  /** HTTP: the status answered, with an RFC 9457 body of this `slug` and `title`. */
  readonly status: HttpStatus;
  readonly slug: string;
  /**
   * The one code of this failure on every entry: `IDEMPOTENCY_` and the slug in capitals
   * (`IDEMPOTENCY_KEY_REUSED`), in HTTP's problem body, GraphQL's `extensions` and a message
   * handler's error reply.
   */
  readonly code: string;
  readonly title: string;
  /**
   * The same delivery may succeed later: HTTP answers `Retry-After`. A broker message is retried
   * whatever its class (it counts against `maxAttempts`), unless it can never succeed: `deadLetter`.
   */
  readonly retryable: boolean;
  /** A broker message that can never succeed (no usable key, a reused key): dead-lettered at once. */
  readonly deadLetter: boolean;
}

type ErrorClass = abstract new (...args: never[]) => IdempotencyError;

function rejected(status: HttpStatus, slug: string, title: string, retryable: boolean, deadLetter: boolean): DeliveryErrorClass {
  return { outcome: 'rejected', status, slug, code: codeOf(slug), title, retryable, deadLetter };
}

function failed(status: HttpStatus, slug: string, title: string, retryable: boolean): DeliveryErrorClass {
  return { outcome: 'failed', status, slug, code: codeOf(slug), title, retryable, deadLetter: false };
}

/** `key-reused` -> `IDEMPOTENCY_KEY_REUSED`. */
function codeOf(slug: string): string {
  return `IDEMPOTENCY_${slug.toUpperCase().replaceAll('-', '_')}`;
}

/** The one classification of the errors a delivery can end with that the module answers itself. */
const CLASSES = new Map<ErrorClass, DeliveryErrorClass>([
  [IdempotencyKeyError, rejected(HttpStatus.BAD_REQUEST, 'invalid-key', 'Invalid idempotency key', false, true)],
  [IdempotencyKeyReusedError, rejected(HttpStatus.UNPROCESSABLE_ENTITY, 'key-reused', 'Idempotency key reused', false, true)],
  [IdempotencyInFlightError, rejected(HttpStatus.CONFLICT, 'in-flight', 'Request in flight', true, false)],
  [IdempotencyTransientError, failed(HttpStatus.SERVICE_UNAVAILABLE, 'transient', 'Transaction aborted', true)],
  [IdempotencyLeaseLostError, failed(HttpStatus.CONFLICT, 'lease-lost', 'Lease taken over', true)],
  [
    IdempotencyUnavailableError,
    { outcome: 'unavailable', status: HttpStatus.SERVICE_UNAVAILABLE, slug: 'unavailable', code: codeOf('unavailable'), title: 'Database unavailable', retryable: true, deadLetter: false },
  ],
  [IdempotencyTransactionAbortedError, failed(HttpStatus.INTERNAL_SERVER_ERROR, 'transaction-aborted', 'Transaction aborted by a failed statement', false)],
  [IdempotencyCommitRefusedError, failed(HttpStatus.INTERNAL_SERVER_ERROR, 'commit-refused', 'Commit refused by a constraint', false)],
  [IdempotencyClaimTransactionError, failed(HttpStatus.INTERNAL_SERVER_ERROR, 'claim-transaction', "The handler's transaction control conflicts with the claim", false)],
  [IdempotencyResponseTooLargeError, failed(HttpStatus.INTERNAL_SERVER_ERROR, 'response-too-large', 'Response too large to record', false)],
  [IdempotencyRecordUnreadableError, failed(HttpStatus.INTERNAL_SERVER_ERROR, 'record-unreadable', 'Recorded response unreadable', false)],
  [IdempotencySchemaError, failed(HttpStatus.INTERNAL_SERVER_ERROR, 'store-schema', 'Idempotency store incomplete', false)],
]);

/** The error classes the module answers itself (the error filter's `@Catch` list). */
export const CLASSIFIED_ERRORS: readonly ErrorClass[] = [...CLASSES.keys()];

/** How `error` is treated, when it is one of the module's delivery errors. */
export function classify(error: unknown): DeliveryErrorClass | undefined {
  return error instanceof Error ? CLASSES.get(error.constructor as ErrorClass) : undefined;
}

/**
 * The module's own delivery error that `error` carries as its `cause`, when a data layer wrapped
 * it on its way out of the handler (Drizzle's `DrizzleQueryError` wraps what the claim's client
 * refused); else `error` itself.
 */
export function unwrapDeliveryError(error: unknown): unknown {
  let candidate = error;
  for (let depth = 0; depth < 4 && candidate instanceof Error && !classify(candidate); depth++) {
    candidate = candidate.cause;
  }
  return classify(candidate) ? candidate : error;
}

/** How a delivery that ended with `error` is counted: the module's class, else a 4xx from the handler's pipeline is `rejected`. */
export function failureOutcome(error: unknown): FailureOutcome {
  const known = classify(error);
  if (known) {
    return known.outcome;
  }
  return error instanceof HttpException && isClientError(error.getStatus()) ? 'rejected' : 'failed';
}

/** The outcome of an HTTP response answered with an error status. */
export function statusOutcome(status: number): Exclude<FailureOutcome, 'unavailable'> {
  return isClientError(status) ? 'rejected' : 'failed';
}

function isClientError(status: number): boolean {
  return status >= 400 && status < 500;
}
