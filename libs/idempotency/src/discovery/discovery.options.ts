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
  /** Consumer names claimed outside this application's handlers, which the warning leaves out. */
  readonly knownConsumers: ReadonlySet<string>;
}

/** The token of the start-up checks' slice of the module's options. @internal */
export const DISCOVERY_OPTIONS = Symbol('IDEMPOTENCY:DISCOVERY_OPTIONS');

/**
 * `senders`, `warnOnUnusedConsumers` and `knownConsumers` with their defaults applied. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveDiscovery(
  senders: Record<string, SenderOptions> | undefined,
  warnOnUnusedConsumers: boolean | undefined,
  knownConsumers: readonly string[] | undefined,
): ResolvedDiscoveryOptions {
  return {
    senderHorizonsMs: resolveSenders(senders ?? {}),
    warnOnUnusedConsumers: toFlag('warnOnUnusedConsumers', warnOnUnusedConsumers ?? true),
    knownConsumers: resolveKnownConsumers(knownConsumers ?? []),
  };
}

/** The names of `knownConsumers`. @throws IdempotencyOptionsError when it is not a list of non-empty texts. */
function resolveKnownConsumers(names: readonly string[]): ReadonlySet<string> {
  if (!Array.isArray(names) || !names.every((name) => typeof name === 'string' && name.length > 0)) {
    throw new IdempotencyOptionsError(discoveryMessages.invalidKnownConsumers(names));
  }
  return new Set(names);
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
