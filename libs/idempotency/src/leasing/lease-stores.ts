import { Inject, Injectable } from '@nestjs/common';
import { type ResolvedStoreOptions, STORE_OPTIONS } from '../data-layers/store.options.js';
import { LEASE_OPTIONS, type ResolvedLeaseOptions } from './lease.options.js';
import { DataLayerJoin } from '../data-layers/data-layer-join.js';
import type { LeaseStore } from './lease-store.js';
import { PostgresLeaseStore } from './postgres-lease.store.js';
import { MariaDbLeaseStore } from './mariadb-lease.store.js';
import { MARIADB_DIALECT } from '../dialects/mariadb/mariadb.dialect.js';

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
  /** The built-in store, made at its first use: which table it speaks to is known once the data layer started. */
  private builtIn: LeaseStore | undefined;

  constructor(
    @Inject(STORE_OPTIONS) private readonly store: ResolvedStoreOptions,
    @Inject(LEASE_OPTIONS) options: ResolvedLeaseOptions,
    private readonly join: DataLayerJoin,
  ) {
    this.stores = new Map(Object.entries(options.stores));
  }

  /** Every store's name. */
  names(): string[] {
    return [POSTGRES_STORE, ...this.stores.keys()];
  }

  /** The store `name`; the start-up checks made sure it exists. */
  get(name: string): LeaseStore {
    if (name !== POSTGRES_STORE) {
      return this.stores.get(name) as LeaseStore;
    }
    this.builtIn ??=
      this.join.dialect === MARIADB_DIALECT ? new MariaDbLeaseStore(this.join, this.store.tableName) : new PostgresLeaseStore(this.join, this.store.tableName);
    return this.builtIn;
  }
}
