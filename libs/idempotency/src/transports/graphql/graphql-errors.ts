import type { IdempotencyError } from '../../errors/idempotency.errors.js';
import { problemAnswer } from '../http/problem-details.js';

/** What the GraphQL error of one of the module's delivery errors carries in its `extensions`: HTTP's problem type, said the GraphQL way. */
export interface GraphqlErrorExtensions {
  /** `IDEMPOTENCY_` and the problem type's name: `IDEMPOTENCY_KEY_REUSED` for `urn:idempotency:key-reused`. */
  readonly code: string;
  /** The problem type the same failure is answered with over HTTP: `urn:idempotency:key-reused`. */
  readonly type: string;
  /** The HTTP status it is answered with over HTTP: 400 (invalid key), 422 (key reused), 409 (in flight), 503 (unavailable), ... */
  readonly status: number;
  /** Seconds after which the same operation may succeed (HTTP's `Retry-After`): for a twin in flight and an unavailable database. */
  readonly retryAfter?: number;
}

/** The GraphQL `extensions` of `error`, one of the classified delivery errors (`CLASSIFIED_ERRORS`). */
export function graphqlExtensions(error: IdempotencyError): GraphqlErrorExtensions {
  const { status, headers, body } = problemAnswer(error);
  const retryAfter = headers['retry-after'];
  return {
    code: body.code,
    type: body.type,
    status,
    ...(retryAfter === undefined ? {} : { retryAfter: Number(retryAfter) }),
  };
}

/**
 * `error` with its GraphQL `extensions`, which graphql-js copies onto the GraphQL error it makes of
 * an error a resolver ends with; the error stays the module's own (its `originalError`, for a
 * `formatError` that checks `instanceof`).
 */
export function asGraphqlError(error: IdempotencyError): IdempotencyError & { readonly extensions: GraphqlErrorExtensions } {
  return Object.assign(error, { extensions: graphqlExtensions(error) });
}
