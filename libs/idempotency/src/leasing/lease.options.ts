import { IdempotencyOptionsError } from '../errors/idempotency-options.error.js';
import { leaseMessages } from './lease.messages.js';
import type { LeaseStore } from './lease-store.js';

/**
 * `stores`, each checked to be a lease store under a name other than the built-in one. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveStores(stores: Record<string, LeaseStore>): Record<string, LeaseStore> {
  for (const [name, store] of Object.entries(stores)) {
    const operations = ['claim', 'complete', 'release', 'extend'] as const;
    if (name === 'postgres' || !operations.every((operation) => typeof (store as Partial<LeaseStore>)?.[operation] === 'function')) {
      throw new IdempotencyOptionsError(leaseMessages.invalidStore(name));
    }
  }
  return stores;
}
