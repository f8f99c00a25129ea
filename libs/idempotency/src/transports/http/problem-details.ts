import { classify, type DeliveryErrorClass } from '../../errors/delivery-error-classes.js';
import type { IdempotencyError } from '../../errors/idempotency.errors.js';
import { retryAfterOf } from './retry-after.js';

/** An RFC 9457 problem answer; `code`, an extension member, is the failure's code on every entry. */
export interface ProblemAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: { type: string; title: string; status: number; detail: string; code: string };
}

/** The problem answer to `error`, one of the classified delivery errors (`CLASSIFIED_ERRORS`). */
export function problemAnswer(error: IdempotencyError): ProblemAnswer {
  const problem = classify(error) as DeliveryErrorClass;
  return {
    status: problem.status,
    headers: {
      'content-type': 'application/problem+json',
      ...(problem.retryable ? { 'retry-after': String(retryAfterOf(error)) } : {}),
    },
    body: { type: `urn:idempotency:${problem.slug}`, title: problem.title, status: problem.status, detail: error.message, code: problem.code },
  };
}
