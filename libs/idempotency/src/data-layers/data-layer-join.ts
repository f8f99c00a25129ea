import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, ModuleRef } from '@nestjs/core';
import { CLAIM_STORAGE, type Claimant, type ClaimConnection, type DataLayerHost, type IdempotencyDataLayer, type QueryResult } from './data-layer.js';
import { type ResolvedStoreOptions, STORE_OPTIONS } from './store.options.js';
import type { StoreDialect } from '../dialects/store-dialect.js';
import { POSTGRES_DIALECT } from '../dialects/postgres/postgres.dialect.js';
import { MARIADB_DIALECT } from '../dialects/mariadb/mariadb.dialect.js';

/**
 * The module's data layer, attached to the application: what reads and writes the store goes
 * through it, and from the module's init on, the handlers' writes join their claims through it.
 * @internal
 */
@Injectable()
export class DataLayerJoin implements OnModuleInit {
  readonly layer: IdempotencyDataLayer;

  constructor(
    @Inject(STORE_OPTIONS) store: ResolvedStoreOptions,
    @Inject(CLAIM_STORAGE) storage: DataLayerHost['storage'],
    moduleRef: ModuleRef,
    discovery: DiscoveryService,
  ) {
    this.layer = store.dataLayer;
    this.layer.attach({ moduleRef, discovery, storage });
  }

  /** The SQL of the database the layer reaches; a layer that finds it out when it starts (TypeORM, from its data source) says it from then on. */
  get dialect(): StoreDialect {
    return this.layer.dialect === 'mariadb' ? MARIADB_DIALECT : POSTGRES_DIALECT;
  }

  onModuleInit(): Promise<void> {
    return this.layer.start();
  }

  /** One parameterised statement in a transaction of its own (inside a handler: in its claim's). */
  query<Row>(text: string, parameters?: readonly unknown[]): Promise<QueryResult<Row>> {
    return this.layer.query<Row>(text, parameters);
  }

  /** A connection for a claim, waiting at most `timeoutMs`. @throws IdempotencyUnavailableError */
  connect(timeoutMs: number, claimant: Claimant): Promise<ClaimConnection> {
    return this.layer.connect(timeoutMs, claimant);
  }
}

/** What tells the store's dialect, read when it is needed (the layer may find it out when it starts). @internal */
export interface DialectSource {
  readonly dialect: StoreDialect;
}

/** The token of the store's `DialectSource`, for what writes SQL outside the store handle (the outbox's `publish()`). @internal */
export const STORE_DIALECT = Symbol('IDEMPOTENCY:STORE_DIALECT');

/** The module's data layer, as the `DialectSource` of the store. @internal */
export const storeDialectProvider = { provide: STORE_DIALECT, useExisting: DataLayerJoin };
