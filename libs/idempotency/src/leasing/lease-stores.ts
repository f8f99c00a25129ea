import { Inject, Injectable } from '@nestjs/common';
import { RESOLVED_OPTIONS, type ResolvedIdempotencyOptions } from '../idempotency.options.js';
import { DataSourceJoin } from '../joining/data-source-join.js';
import type { LeaseStore } from './lease-store.js';
import { PostgresLeaseStore } from './postgres-lease.store.js';

/**
 * The name of the built-in store: the processed-messages table.
 * @internal
 */
export const POSTGRES_STORE = 'postgres';

/**
 * The lease stores of the module, by name: `'postgres'`, and those of the module's `stores` option.
 * @internal
 */
@Injectable()
export class LeaseStores {
  private readonly stores: ReadonlyMap<string, LeaseStore>;

  constructor(@Inject(RESOLVED_OPTIONS) options: ResolvedIdempotencyOptions, join: DataSourceJoin) {
    this.stores = new Map([
      [POSTGRES_STORE, new PostgresLeaseStore(() => join.claimDataSource(), options.tableName)],
      ...Object.entries(options.stores),
    ]);
  }

  /** Every store's name. */
  names(): string[] {
    return [...this.stores.keys()];
  }

  /** The store `name`; the start-up checks made sure it exists. */
  get(name: string): LeaseStore {
    return this.stores.get(name) as LeaseStore;
  }
}
