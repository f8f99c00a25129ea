import { type Duration, MAX_RETENTION_MS, toMilliseconds } from '../duration/duration.js';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { toFlag } from '../options/option-values.js';
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
 * What the start-up checks of the handlers read of the module's options.
 * @internal
 */
export interface ResolvedDiscoveryOptions {
  /** Redelivery horizon of each declared sender, in milliseconds. */
  readonly senderHorizonsMs: Readonly<Record<string, number>>;
  readonly warnOnUnusedConsumers: boolean;
}

/** The token of the start-up checks' slice of the module's options. @internal */
export const DISCOVERY_OPTIONS = Symbol('IDEMPOTENCY:DISCOVERY_OPTIONS');

/**
 * `senders` and `warnOnUnusedConsumers` with their defaults applied. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveDiscovery(senders: Record<string, SenderOptions> | undefined, warnOnUnusedConsumers: boolean | undefined): ResolvedDiscoveryOptions {
  return { senderHorizonsMs: resolveSenders(senders ?? {}), warnOnUnusedConsumers: toFlag('warnOnUnusedConsumers', warnOnUnusedConsumers ?? true) };
}

/** The redelivery horizon of each declared sender, in milliseconds. @throws IdempotencyOptionsError */
function resolveSenders(senders: Record<string, SenderOptions>): Record<string, number> {
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
