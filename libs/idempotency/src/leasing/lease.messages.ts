import { shownKey } from '../keys/scoped-key.js';

/** The message texts of lease mode and its stores. */
export const leaseMessages = {
  leaseLost: (consumer: string, key: string, held?: { heldMs: number; leaseMs: number; renewLeaseForMs: number }) =>
    `The lease of ${shownKey(key)} for ${consumer} expired and another delivery took it over, so this delivery's result was not ` +
    'recorded' +
    (held
      ? ` (the handler ran ${seconds(held.heldMs)} under a lease of ${seconds(held.leaseMs)}, ` +
        (held.renewLeaseForMs > 0 ? `renewed up to ${seconds(held.renewLeaseForMs)} after the claim)` : 'never renewed)')
      : '') +
    "; the delivery that holds the lease answers the message's duplicates. Retry, or raise the handler's renewLeaseFor " +
    '(or its lease) above the time it takes.',
  leaseRenewalLost: (consumer: string, key: string, heldMs: number) =>
    `The lease of ${shownKey(key)} for ${consumer} could not be renewed ${seconds(heldMs)} after its claim: it expired and another ` +
    'delivery took it over (was the event loop blocked for longer than two thirds of the lease?). The handler runs on, ' +
    'but its result will not be recorded. Renewing stops.',
  leaseRenewalFailed: (consumer: string, key: string, reason: string) =>
    `The lease of ${shownKey(key)} for ${consumer} could not be renewed: the store failed (${reason}). Trying again at the next renewal.`,
  storeFailed: (store: string, consumer: string, key: string, reason: string) =>
    `The lease store '${store}' failed for ${shownKey(key)} (${consumer}): ${reason}. Retry.`,
  invalidStore: (name: string) =>
    name === 'postgres'
      ? "stores.postgres is the built-in store of the processed-messages table: give your store another name."
      : `stores.${name} must be a lease store (claim, complete, release and extend), e.g. new RedisLeaseStore(redisClient).`,
};

/** Milliseconds as seconds, for a reader: `4.2 s`, `0.35 s`. */
function seconds(milliseconds: number): string {
  return `${Number((milliseconds / 1000).toPrecision(2))} s`;
}
