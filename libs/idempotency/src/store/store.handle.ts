import { Inject, Injectable } from '@nestjs/common';
import { CLAIM_OPTIONS, type ResolvedClaimOptions } from '../claiming/claim.options.js';
import type { Claimant, ClaimConnection, QueryResult } from '../data-layers/data-layer.js';
import { DataLayerJoin } from '../data-layers/data-layer-join.js';
import { type ResolvedStoreOptions, STORE_OPTIONS } from '../data-layers/store.options.js';
import type { StoreDialect, StoreFigures } from '../dialects/store-dialect.js';
import type { OutboxSample } from './outbox-sample.js';

/** The outbox table's name, null when the module has no `outbox`: provided by the modules from the outbox's options. @internal */
export const OUTBOX_TABLE = Symbol('IDEMPOTENCY:OUTBOX_TABLE');

/**
 * The store as the background services read and write it (the operators' admin, the purge, the
 * health indicator, the samplers, the start-up checks of the schema and of consumer names, the
 * outbox relay): the module's data layer, the names of its tables, and the reads several of them
 * share. A delivery's claim goes through its own path, not this one.
 * @internal
 */
@Injectable()
export class StoreHandle {
  /** The processed-messages table. */
  readonly table: string;
  constructor(
    @Inject(STORE_OPTIONS) store: ResolvedStoreOptions,
    @Inject(OUTBOX_TABLE) readonly outboxTable: string | null,
    @Inject(CLAIM_OPTIONS) private readonly claims: ResolvedClaimOptions,
    private readonly join: DataLayerJoin,
  ) {
    this.table = store.tableName;
  }

  /** The SQL of the store's database, concern by concern. */
  get dialect(): StoreDialect {
    return this.join.dialect;
  }

  /** Whether a schema error should name the package's SQL files rather than its TypeORM migrations. */
  get adviseSqlFiles(): boolean {
    return this.join.layer.schemaAdvice === 'sql-files';
  }

  /** One parameterised statement in a transaction of its own; bound, for the dialects' functions that take a `StoreQuery`. */
  readonly query = <Row>(text: string, parameters?: readonly unknown[]): Promise<QueryResult<Row>> => this.join.query<Row>(text, parameters);

  /** A connection of the data layer for `claimant`, waiting at most the module's `connectionTimeout`. @throws IdempotencyUnavailableError */
  connect(claimant: Claimant): Promise<ClaimConnection> {
    return this.join.connect(this.claims.connectionTimeoutMs, claimant);
  }

  /** The processed-messages table's size and purge lag, in one round trip, never a `count(*)`. */
  async statistics(): Promise<StoreFigures> {
    const { statistics } = this.dialect;
    const {
      rows: [row],
    } = await this.query<never>(statistics.storeStatisticsSql(this.table));
    return statistics.toStoreFigures(row);
  }

  /** The outbox's lag and dead letters, in one round trip. Only with an `outbox`. */
  async outboxState(): Promise<OutboxSample> {
    const outbox = this.dialect.outbox!;
    const { rows } = await this.query<Parameters<typeof outbox.toOutboxSample>[0]>(outbox.outboxStateSql(this.outboxTable!));
    return outbox.toOutboxSample(rows[0]);
  }
}
