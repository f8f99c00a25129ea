import type { InjectionToken } from '@nestjs/common';
import { takeConnection } from '../take-connection.js';
import type { Claimant, ClaimConnection, DataLayerHost, IdempotencyDataLayer, QueryResult } from '../data-layer.js';
import { dataLayerMessages } from '../data-layer.messages.js';
import { MariaDbClaimConnection, type MariaDbConnection, calledBack, takesSeveralStatements } from '../mariadb-claim-connection.js';
import { OWN_STATEMENT_OPTIONS, ownStatement, positional, toQueryResult } from '../mariadb-own-statements.js';
import { providedPool } from '../provided-pool.js';

/**
 * A mysql2 pool, as the module types it: mysql2's `createPool()` (callbacks) or
 * `mysql2/promise`'s `createPool()`, whose callback pool is its `pool`. Declared here so that the
 * package's types need no mysql2.
 */
export interface Mysql2Pool {
  getConnection(...args: unknown[]): unknown;
  query(...args: unknown[]): unknown;
}

/** Options of `Mysql2PoolDataLayer`. */
export interface Mysql2PoolDataLayerOptions {
  /**
   * The mysql2 pool on MariaDB that holds the processed-messages table and that the application
   * writes through: the pool itself (mysql2's or `mysql2/promise`'s), or the token of its provider.
   * Created with `multipleStatements: true`, the claim's BEGIN travels with the claim and its
   * COMMIT with the record, one round trip each; without, each statement is a round trip.
   */
  pool: Mysql2Pool | InjectionToken;
}

/** What the layer uses of mysql2's callback pool. */
interface CorePool {
  getConnection(callback: (error: Error | null, connection: MariaDbConnection) => void): void;
  query(...args: unknown[]): unknown;
  execute(...args: unknown[]): unknown;
  readonly config: { readonly connectionLimit?: number };
  readonly _freeConnections?: { readonly length: number };
  readonly _connectionQueue?: { readonly length: number };
}

type Send = (this: unknown, ...args: unknown[]) => unknown;

/**
 * The claims in a mysql2 pool on MariaDB (10.6 or newer): for plain mysql2, and for Drizzle
 * (`drizzle-orm/mysql2`) and Kysely (`MysqlDialect`) built on the pool.
 *
 * While an idempotent handler runs, the pool hands out the claim's own connection: `pool.query()`,
 * `pool.execute()` and `pool.getConnection()` run in the claim's transaction and commit or roll back
 * with it. A transaction they open on it (`beginTransaction()`, `START TRANSACTION`, Drizzle's and
 * Kysely's `transaction()`) becomes a savepoint; a COMMIT or ROLLBACK of the claim's own transaction is refused. The module's own statements (the purge, the health figures, the
 * operators' reads) run at READ COMMITTED, which takes no gap locks that would hold up claims.
 *
 * @example
 * ```ts
 * const pool = mysql.createPool({ uri: process.env.DATABASE_URL, multipleStatements: true });
 * IdempotencyModule.forRoot({ dataLayer: new Mysql2PoolDataLayer({ pool }) })
 * ```
 */
export class Mysql2PoolDataLayer implements IdempotencyDataLayer {
  readonly name = 'mysql2';
  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  readonly schemaAdvice = 'sql-files';
  /** Of `IdempotencyDataLayer`: the store is on MariaDB. */
  readonly dialect = 'mariadb';
  private host!: DataLayerHost;
  private pool: CorePool | undefined;
  private getConnectionOwn!: CorePool['getConnection'];

  /** @internal The entity manager of the TypeORM data source on the pool, when `TypeOrmDataLayer` joins it: what `IdempotencyContext.manager` answers. */
  entityManager: unknown;

  constructor(private readonly options: Mysql2PoolDataLayerOptions) {}

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  attach(host: DataLayerHost): void {
    this.host = host;
  }

  /** Called by the module: finds the pool and joins it to the claims. */
  async start(): Promise<void> {
    this.resolvePool();
  }

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  async query<Row>(text: string, parameters: readonly unknown[] = []): Promise<QueryResult<Row>> {
    const pool = this.pool ?? this.resolvePool();
    const claim = MariaDbClaimConnection.inFlight(this.host.storage);
    if (claim?.owner === pool) {
      const [sql, values] = positional(text, parameters);
      return toQueryResult(await calledBack((done) => claim.handle.query(sql, values, done)));
    }
    const connection = await calledBack<MariaDbConnection>((done) => this.getConnectionOwn.call(pool, done));
    try {
      const send = (sql: string, values: unknown[]) => calledBack((done) => connection.query({ sql, ...OWN_STATEMENT_OPTIONS }, values, done));
      return await ownStatement<Row>(send, takesSeveralStatements(connection), text, parameters);
    } finally {
      connection.release();
    }
  }

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  async connect(timeoutMs: number, claimant: Claimant): Promise<ClaimConnection> {
    const pool = this.pool ?? this.resolvePool();
    const connection = await takeConnection(
      {
        take: () => calledBack<MariaDbConnection>((done) => this.getConnectionOwn.call(pool, done)),
        giveBack: (late) => late.release(),
        idleFree: (pool._freeConnections?.length ?? 0) > (pool._connectionQueue?.length ?? 0),
        figures: () => ({ size: pool.config.connectionLimit, waiting: pool._connectionQueue?.length }),
      },
      timeoutMs,
      claimant,
    );
    const driver = { promises: false, multipleStatements: takesSeveralStatements(connection), methodsOnLease: true };
    return new MariaDbClaimConnection(pool, connection, driver, claimant, timeoutMs, (broken) => (broken ? connection.destroy() : connection.release()), this.entityManager);
  }

  private resolvePool(): CorePool {
    if (this.pool) {
      return this.pool;
    }
    const pool = providedPool(this.host, this.options.pool, isPool, dataLayerMessages.notAMysql2Pool);
    // mysql2/promise's pool sends through its callback pool, which is the one joined.
    const core = ((pool as { pool?: unknown }).pool ?? pool) as CorePool;
    this.join(core);
    this.pool = core;
    return core;
  }

  /** While a claim on `pool` is open in the caller's context, the pool hands out its connection. */
  private join(pool: CorePool): void {
    const storage = this.host.storage;
    const getConnectionOwn = pool.getConnection as CorePool['getConnection'];
    const queryOwn = pool.query as Send;
    const executeOwn = pool.execute as Send;
    this.getConnectionOwn = getConnectionOwn;
    const joined = (): MariaDbClaimConnection | undefined => {
      const claim = MariaDbClaimConnection.inFlight(storage);
      return claim?.owner === pool ? claim : undefined;
    };
    pool.getConnection = function getConnectionJoined(this: CorePool, done: (error: Error | null, connection: MariaDbConnection) => void) {
      const claim = joined();
      if (!claim) {
        return getConnectionOwn.call(this, done);
      }
      const lease = claim.lease();
      queueMicrotask(() => done(null, lease));
    };
    pool.query = function queryJoined(this: CorePool, ...args: unknown[]) {
      const claim = joined();
      return claim ? claim.handle.query(...(args as [unknown])) : queryOwn.apply(this, args);
    };
    pool.execute = function executeJoined(this: CorePool, ...args: unknown[]) {
      const claim = joined();
      return claim ? claim.handle.execute(...(args as [unknown])) : executeOwn.apply(this, args);
    };
  }
}

/** A mysql2 pool (callbacks or promises), told by its shape so that any copy of mysql2 is recognised. */
function isPool(candidate: unknown): candidate is Mysql2Pool {
  if (typeof candidate !== 'object' || candidate === null) {
    return false;
  }
  const core = ((candidate as { pool?: unknown }).pool ?? candidate) as Partial<CorePool>;
  return typeof core.getConnection === 'function' && typeof core.query === 'function' && typeof core.config === 'object';
}

