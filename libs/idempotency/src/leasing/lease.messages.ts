import { shownKey, shownSeconds } from '../errors/error.messages.js';

/** The message texts of lease mode and its stores. */
export const leaseMessages = {
  leaseRenewalLost: (consumer: string, key: string, heldMs: number) =>
    `The lease of ${shownKey(key)} for ${consumer} could not be renewed ${shownSeconds(heldMs)} after its claim: it expired and another ` +
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

