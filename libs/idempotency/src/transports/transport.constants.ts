import type { Verdict } from './message-transport.js';

/** A retry waits at most this many times the handler's `retryDelay`. */
const MAX_RETRY_DELAY_FACTOR = 64;

/** How long a transport that delays its retries waits before `attempt` + 1: `retryDelay`, doubled with each failure, up to 64 times. */
export function retryDelayMs(retry: Extract<Verdict, { kind: 'retry' }>, attempt: number): number {
  return retry.retryDelayMs * Math.min(2 ** (attempt - 1), MAX_RETRY_DELAY_FACTOR);
}
