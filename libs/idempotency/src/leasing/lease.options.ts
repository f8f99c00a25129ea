import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { leaseMessages } from './lease.messages.js';
import type { LeaseStore } from './lease-store.js';

/**
 * The lease stores of the module's options.
 * @internal
 */
export interface ResolvedLeaseOptions {
  /** The stores besides the built-in `'postgres'`, by name. */
  readonly stores: Readonly<Record<string, LeaseStore>>;
  /** The store of handlers that set none. */
  readonly store: string;
}

/** The token of the lease stores' slice of the module's options. @internal */
export const LEASE_OPTIONS = Symbol('IDEMPOTENCY:LEASE_OPTIONS');

/**
 * `stores` and `store` with their defaults applied. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveLeasing(stores: Record<string, LeaseStore> | undefined, store: string | undefined): ResolvedLeaseOptions {
  return { stores: resolveStores(stores ?? {}), store: store ?? 'postgres' };
}

/** `stores`, each checked to be a lease store under a name other than the built-in one. @throws IdempotencyOptionsError */
function resolveStores(stores: Record<string, LeaseStore>): Record<string, LeaseStore> {
  for (const [name, store] of Object.entries(stores)) {
    const operations = ['claim', 'complete', 'release', 'extend'] as const;
    if (name === 'postgres' || !operations.every((operation) => typeof (store as Partial<LeaseStore>)?.[operation] === 'function')) {
      throw new IdempotencyOptionsError(leaseMessages.invalidStore(name));
    }
  }
  return stores;
}
