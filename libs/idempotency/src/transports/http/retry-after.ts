import { RETRY_AFTER_SECONDS } from './http.constants.js';

/** The seconds of the `Retry-After` each failure is answered with, noted by the entry that delivered it, for its handler's `retryAfter`. */
const retryAfters = new WeakMap<object, number>();

/**
 * Notes that `error`, a delivery's failure, is answered with `Retry-After: seconds` (HTTP; GraphQL's
 * `extensions.retryAfter`) where it is one a retry may settle (a twin in flight, no connection in time).
 * @internal
 */
export function answerRetryAfter(error: unknown, seconds: number): void {
  if (typeof error === 'object' && error !== null) {
    retryAfters.set(error, seconds);
  }
}

/**
 * The seconds of `error`'s `Retry-After`: its handler's `retryAfter`, else `RETRY_AFTER_SECONDS`.
 * @internal
 */
export function retryAfterOf(error: object): number {
  return retryAfters.get(error) ?? RETRY_AFTER_SECONDS;
}
