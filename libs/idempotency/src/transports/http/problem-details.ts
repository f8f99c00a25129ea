import { HttpStatus } from '@nestjs/common';
import { IdempotencyClaimTransactionError } from '../../errors/idempotency-claim-transaction.error.js';
import { IdempotencyError } from '../../errors/idempotency.error.js';
import { IdempotencyInFlightError } from '../../errors/idempotency-in-flight.error.js';
import { IdempotencyKeyReusedError } from '../../errors/idempotency-key-reused.error.js';
import { IdempotencyKeyError } from '../../errors/idempotency-key.error.js';
import { IdempotencyLeaseLostError } from '../../errors/idempotency-lease-lost.error.js';
import { IdempotencyRecordUnreadableError } from '../../errors/idempotency-record-unreadable.error.js';
import { IdempotencyResponseTooLargeError } from '../../errors/idempotency-response-too-large.error.js';
import { IdempotencyTransactionAbortedError } from '../../errors/idempotency-transaction-aborted.error.js';
import { IdempotencyTransientError } from '../../errors/idempotency-transient.error.js';
import { IdempotencyUnavailableError } from '../../errors/idempotency-unavailable.error.js';
import { RETRY_AFTER_SECONDS } from '../../idempotency.internal-constants.js';

interface ProblemType {
  readonly status: HttpStatus;
  readonly slug: string;
  readonly title: string;
  /** Answered with `Retry-After`: the same request may succeed later. */
  readonly retryable: boolean;
}

/** The errors of a delivery that the module answers itself, and how. */
export const PROBLEM_TYPES = new Map<abstract new (...args: never[]) => IdempotencyError, ProblemType>([
  [IdempotencyKeyError, { status: HttpStatus.BAD_REQUEST, slug: 'invalid-key', title: 'Invalid idempotency key', retryable: false }],
  [IdempotencyKeyReusedError, { status: HttpStatus.UNPROCESSABLE_ENTITY, slug: 'key-reused', title: 'Idempotency key reused', retryable: false }],
  [IdempotencyInFlightError, { status: HttpStatus.CONFLICT, slug: 'in-flight', title: 'Request in flight', retryable: true }],
  [IdempotencyTransientError, { status: HttpStatus.SERVICE_UNAVAILABLE, slug: 'transient', title: 'Transaction aborted', retryable: true }],
  [IdempotencyLeaseLostError, { status: HttpStatus.CONFLICT, slug: 'lease-lost', title: 'Lease taken over', retryable: true }],
  [IdempotencyUnavailableError, { status: HttpStatus.SERVICE_UNAVAILABLE, slug: 'unavailable', title: 'Database unavailable', retryable: true }],
  [
    IdempotencyTransactionAbortedError,
    { status: HttpStatus.INTERNAL_SERVER_ERROR, slug: 'transaction-aborted', title: 'Transaction aborted by a failed statement', retryable: false },
  ],
  [
    IdempotencyClaimTransactionError,
    { status: HttpStatus.INTERNAL_SERVER_ERROR, slug: 'claim-transaction', title: "The claim's transaction was ended by the handler", retryable: false },
  ],
  [
    IdempotencyResponseTooLargeError,
    { status: HttpStatus.INTERNAL_SERVER_ERROR, slug: 'response-too-large', title: 'Response too large to record', retryable: false },
  ],
  [
    IdempotencyRecordUnreadableError,
    { status: HttpStatus.INTERNAL_SERVER_ERROR, slug: 'record-unreadable', title: 'Recorded response unreadable', retryable: false },
  ],
]);

/** An RFC 9457 problem answer. */
export interface ProblemAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: { type: string; title: string; status: number; detail: string };
}

/** The problem answer to `error`, one of `PROBLEM_TYPES`. */
export function problemAnswer(error: IdempotencyError): ProblemAnswer {
  const problem = PROBLEM_TYPES.get(error.constructor as new () => IdempotencyError) as ProblemType;
  return {
    status: problem.status,
    headers: {
      'content-type': 'application/problem+json',
      ...(problem.retryable ? { 'retry-after': String(RETRY_AFTER_SECONDS) } : {}),
    },
    body: { type: `urn:idempotency:${problem.slug}`, title: problem.title, status: problem.status, detail: error.message },
  };
}
