import type { Verdict } from '../message-transport.js';
import { retryDelayMs } from '../transport.constants.js';

/** The longest visibility timeout SQS accepts: 12 hours, in seconds. */
const MAX_VISIBILITY_SECONDS = 12 * 60 * 60;

/**
 * How long a failed SQS message stays hidden before SQS shows it again, in whole seconds: the
 * handler's `retryDelay` or the message's visibility timeout, whichever is longer, doubled with
 * each receive of the message (`receiveCount`, its `ApproximateReceiveCount`), up to 64 times
 * that and at most 12 hours. Never sooner than the visibility timeout would have shown it.
 * @internal
 */
export function sqsRetryDelaySeconds(retry: Extract<Verdict, { kind: 'retry' }>, receiveCount: number, visibilitySeconds: number | undefined): number {
  const base = Math.max(retry.retryDelayMs, (visibilitySeconds ?? 0) * 1000);
  return Math.min(Math.ceil(retryDelayMs({ ...retry, retryDelayMs: base }, Math.max(receiveCount, 1)) / 1000), MAX_VISIBILITY_SECONDS);
}
