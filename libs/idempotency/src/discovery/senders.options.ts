import { type Duration, MAX_RETENTION_MS, toMilliseconds } from '../duration/duration.js';
import { IdempotencyOptionsError } from '../errors/idempotency-options.error.js';
import { discoveryMessages } from './discovery.messages.js';

/** What the module knows about one sender. */
export interface SenderOptions {
  /**
   * How long after its first attempt the sender may still redeliver a message (Stripe: `'3d'`;
   * Shopify: `'4h'`). Every handler of this sender must keep ids at least this long.
   */
  redeliveryHorizon: Duration;
}

/**
 * The redelivery horizon of each declared sender, in milliseconds. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveSenders(senders: Record<string, SenderOptions>): Record<string, number> {
  if (typeof senders !== 'object' || senders === null || Array.isArray(senders)) {
    throw new IdempotencyOptionsError(discoveryMessages.invalidSenders(senders));
  }
  return Object.fromEntries(
    Object.entries(senders).map(([sender, declared]) => [
      sender,
      toMilliseconds(`senders.${sender}.redeliveryHorizon`, declared?.redeliveryHorizon, MAX_RETENTION_MS),
    ]),
  );
}
