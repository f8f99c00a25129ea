import type { InjectionToken } from '@nestjs/common';
import { takeConnection } from '../take-connection.js';
import type { Claimant, ClaimConnection, DataLayerHost, IdempotencyDataLayer, QueryResult } from '../data-layer.js';
import { dataLayerMessages } from '../data-layer.messages.js';
import { MariaDbClaimConnection, type MariaDbConnection, takesSeveralStatements } from '../mariadb-claim-connection.js';
import { OWN_STATEMENT_OPTIONS, ownStatement, positional, toQueryResult } from '../mariadb-own-statements.js';
import { providedPool } from '../provided-pool.js';
import { separateApplicationPrismaBatches } from '../prisma-internals.js';

/**
 * A pool of the `mariadb` connector's promise API (`createPool()` from `mariadb`), as the module
 * types it. Declared here so that the package's types need no `mariadb`.
 */
export interface MariaDbPool {
  getConnection(): Promise<unknown>;
  query(sql: unknown, values?: unknown): Promise<unknown>;
  idleConnections(): number;
  taskQueueSize(): number;
}

/** Options of `MariaDbPoolDataLayer`. */
export interface MariaDbPoolDataLayerOptions {
  /**
   * The pool of the `mariadb` connector on MariaDB that holds the processed-messages table and that
   * the application writes through: the pool itself, or the token of its provider. Prisma's
   * `new PrismaMariaDb(pool)` built on it joins the claim while a handler runs. Created with
   * `multipleStatements: true`, the claim's BEGIN travels with the claim and its COMMIT with the
   * record, one round trip each; without, each statement is a round trip.
   */
  pool: MariaDbPool | InjectionToken;
}

/** What the layer uses of a connection of the pool. */
interface PooledConnection extends MariaDbConnection {
  query(sql: unknown, values?: unknown): Promise<unknown>;
  release(): Promise<void>;
  destroy(): void;
}

type Send = (this: MariaDbPool, ...args: unknown[]) => unknown;

/**
 * The claims in a pool of the `mariadb` connector on MariaDB (10.6 or newer): for the connector
 * itself, and for Prisma 7 on it (`@prisma/adapter-mariadb`'s `new PrismaMariaDb(pool)`).
 *
 * While an idempotent handler runs, the pool hands out the claim's own connection: `pool.query()`,
 * `pool.execute()`, `pool.batch()` and `pool.getConnection()` run in the claim's transaction and
 * commit or roll back with it. A transaction they open on it (`beginTransaction()`,
 * `prisma.$transaction()`) becomes a savepoint; a COMMIT or ROLLBACK of the claim's own transaction
 * is refused. A PrismaClient provided in the application batches same-tick `findUnique` calls per
 * claim only. The module's own statements run at READ COMMITTED, which takes no gap locks that would
 * hold up claims.
 *
 * @example
 * ```ts
 * const pool = mariadb.createPool({ host, user, database, connectionLimit: 20, multipleStatements: true });
 * IdempotencyModule.forRoot({ dataLayer: new MariaDbPoolDataLayer({ pool }) })
 * ```
 */
export class MariaDbPoolDataLayer implements IdempotencyDataLayer {
  readonly name = 'mariadb';
  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  readonly schemaAdvice = 'sql-files';
  /** Of `IdempotencyDataLayer`: the store is on MariaDB. */
  readonly dialect = 'mariadb';
  private host!: DataLayerHost;
  private pool: MariaDbPool | undefined;
  private getConnectionOwn!: () => Promise<PooledConnection>;

  constructor(private readonly options: MariaDbPoolDataLayerOptions) {}

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  attach(host: DataLayerHost): void {
    this.host = host;
  }

  /**
   * Called by the module: finds the pool and joins it to the claims; the application's Prisma
   * clients batch their `findUnique` calls per claim, so that each runs in its own handler's transaction.
   */
  async start(): Promise<void> {
    this.resolvePool();
    separateApplicationPrismaBatches(this.host);
  }

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  async query<Row>(text: string, parameters: readonly unknown[] = []): Promise<QueryResult<Row>> {
    const pool = this.pool ?? this.resolvePool();
    const claim = MariaDbClaimConnection.inFlight(this.host.storage);
    if (claim?.owner === pool) {
      const [sql, values] = positional(text, parameters);
      return toQueryResult(await claim.handle.query({ sql, ...OWN_STATEMENT_OPTIONS }, values));
    }
    const connection = await this.getConnectionOwn.call(pool);
    try {
      const send = (sql: string, values: unknown[]) => connection.query({ sql, ...OWN_STATEMENT_OPTIONS }, values);
      return await ownStatement<Row>(send, takesSeveralStatements(connection), text, parameters);
    } finally {
      await connection.release();
    }
  }

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  async connect(timeoutMs: number, claimant: Claimant): Promise<ClaimConnection> {
    const pool = this.pool ?? this.resolvePool();
    const connection = await takeConnection(
      {
        take: () => this.getConnectionOwn.call(pool),
        giveBack: (late) => late.release(),
        idleFree: pool.idleConnections() > pool.taskQueueSize(),
        figures: () => ({ waiting: pool.taskQueueSize() }),
      },
      timeoutMs,
      claimant,
    );
    const driver = { promises: true, multipleStatements: takesSeveralStatements(connection), methodsOnLease: false };
    return new MariaDbClaimConnection(pool, connection, driver, claimant, timeoutMs, (broken) => (broken ? connection.destroy() : void connection.release()));
  }

  private resolvePool(): MariaDbPool {
    if (this.pool) {
      return this.pool;
    }
    const pool = providedPool(this.host, this.options.pool, isPool, dataLayerMessages.notAMariaDbPool);
    this.join(pool);
    this.pool = pool;
    return pool;
  }

  /** While a claim on `pool` is open in the caller's context, the pool hands out its connection. */
  private join(pool: MariaDbPool): void {
    const storage = this.host.storage;
    const joined = (): MariaDbClaimConnection | undefined => {
      const claim = MariaDbClaimConnection.inFlight(storage);
      return claim?.owner === pool ? claim : undefined;
    };
    const own = pool as unknown as Record<'getConnection' | 'query' | 'execute' | 'batch', Send>;
    const getConnectionOwn = own.getConnection;
    this.getConnectionOwn = getConnectionOwn as () => Promise<PooledConnection>;
    own.getConnection = function getConnectionJoined(this: MariaDbPool) {
      const claim = joined();
      return claim ? Promise.resolve(claim.lease()) : getConnectionOwn.call(this);
    };
    for (const method of ['query', 'execute', 'batch'] as const) {
      const send = own[method];
      own[method] = function sendJoined(this: MariaDbPool, ...args: unknown[]) {
        const claim = joined();
        return claim ? (claim.handle as unknown as Record<typeof method, Send>)[method].apply(pool, args) : send.apply(this, args);
      };
    }
  }
}

/** A pool of the `mariadb` connector's promise API, told by its shape so that any copy of the connector is recognised. */
function isPool(candidate: unknown): candidate is MariaDbPool {
  if (typeof candidate !== 'object' || candidate === null) {
    return false;
  }
  const pool = candidate as Partial<Record<keyof MariaDbPool, unknown>>;
  return typeof pool.getConnection === 'function' && typeof pool.query === 'function' && typeof pool.idleConnections === 'function' && typeof pool.taskQueueSize === 'function';
}
