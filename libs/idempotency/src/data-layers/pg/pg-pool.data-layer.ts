import { type InjectionToken, Logger } from '@nestjs/common';
import type { Pool, PoolClient } from 'pg';
import { takeConnection } from '../take-connection.js';
import type { Claimant, ClaimConnection, DataLayerHost, IdempotencyDataLayer, PgPool, QueryResult } from '../data-layer.js';
import { dataLayerMessages } from '../data-layer.messages.js';
import { JoinedClaimConnection } from '../joined-claim-connection.js';
import { providedPool } from '../provided-pool.js';
import type { ClaimClient } from '../sql-claim-connection.js';
import { separateApplicationPrismaBatches } from '../prisma-internals.js';

/** Options of `PgPoolDataLayer`. */
export interface PgPoolDataLayerOptions {
  /**
   * The `pg` Pool that holds the processed-messages table and that the application writes
   * through: the Pool itself, or the token of its provider. Drizzle (`drizzle({ client: pool })`),
   * Kysely (`new PostgresDialect({ pool })`) and Prisma (`new PrismaPg(pool)`) built on it join the
   * claim while a handler runs.
   */
  pool: PgPool | InjectionToken;
}

type Connect = Pool['connect'];
type Query = (...args: unknown[]) => unknown;

/**
 * The claims in a `pg` Pool: for plain `pg`, and for the data layers built on a Pool (Drizzle on
 * `node-postgres`, Kysely's `PostgresDialect`, Prisma's `@prisma/adapter-pg`).
 *
 * While an idempotent handler runs, the pool hands out the claim's own client: `pool.query()` and
 * `pool.connect()` (which Drizzle, Kysely and Prisma go through) run in the claim's transaction and
 * commit or roll back with it. A transaction they open on it (`db.transaction()`,
 * `prisma.$transaction()`) becomes a savepoint; a COMMIT or ROLLBACK of the claim's own
 * transaction is refused; two such transactions at once take turns on the claim's connection.
 * Another Pool of the same `pg` installation used inside a handler logs a warning naming the
 * handler, once: its writes cannot commit with the claim. A PrismaClient provided in the
 * application batches same-tick `findUnique` calls per claim only.
 *
 * @example
 * ```ts
 * const pool = new Pool({ connectionString: process.env.DATABASE_URL });
 * IdempotencyModule.forRoot({ dataLayer: new PgPoolDataLayer({ pool }) })
 * ```
 */
export class PgPoolDataLayer implements IdempotencyDataLayer {
  readonly name = 'pg';
  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  readonly schemaAdvice = 'sql-files';
  private host!: DataLayerHost;
  private pool: Pool | undefined;
  private connectOwn!: (this: Pool) => Promise<PoolClient>;

  constructor(private readonly options: PgPoolDataLayerOptions) {}

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  attach(host: DataLayerHost): void {
    this.host = host;
  }

  /**
   * Called by the module: finds the pool and joins it to the claims; the application's Prisma clients batch
   * their `findUnique` calls per claim, so that each runs in its own handler's transaction.
   */
  async start(): Promise<void> {
    this.resolvePool();
    separateApplicationPrismaBatches(this.host);
  }

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  async query<Row>(text: string, parameters?: readonly unknown[]): Promise<QueryResult<Row>> {
    const pool = this.pool ?? this.resolvePool();
    const result = await pool.query(text, parameters as unknown[]);
    return { rows: result.rows as Row[], rowCount: result.rowCount ?? result.rows.length };
  }

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  async connect(timeoutMs: number, claimant: Claimant): Promise<ClaimConnection> {
    const pool = this.pool ?? this.resolvePool();
    const client = await takeConnection(
      {
        take: () => this.connectOwn.call(pool),
        giveBack: (late) => late.release(),
        // With an idle connection free the pool hands it over at its next tick: no wait to bound, no timer to arm.
        idleFree: pool.idleCount > pool.waitingCount,
        figures: () => ({ size: pool.options.max, waiting: pool.waitingCount }),
      },
      timeoutMs,
      claimant,
    );
    // The pool listens for a client's 'error' only while the client is idle: lent, a connection the
    // server ends while nothing is sent on it (a handler or the relay awaiting something else)
    // would crash the process. Its next statement fails instead.
    client.on('error', ignoreConnectionError);
    return new JoinedClaimConnection(pool, client as unknown as ClaimClient, claimant, timeoutMs, (broken) => {
      client.off('error', ignoreConnectionError);
      client.release(broken);
    });
  }

  private resolvePool(): Pool {
    if (this.pool) {
      return this.pool;
    }
    const pool = providedPool(this.host, this.options.pool, isPool, dataLayerMessages.notAPool);
    this.join(pool);
    this.pool = pool;
    return pool;
  }

  /** While a claim on `pool` is open in the caller's context, the pool hands out its client. */
  private join(pool: Pool): void {
    // The pool's own methods, taken before other Pools are watched: the claims' pool needs no watch.
    const connectOwn = pool.connect as (this: Pool) => Promise<PoolClient>;
    const queryOwn = pool.query as Query;
    this.connectOwn = connectOwn;
    const storage = this.host.storage;
    warnOnOtherPools(pool, storage);
    const joined = (): JoinedClaimConnection | undefined => {
      const claim = JoinedClaimConnection.inFlight(storage);
      return claim?.owner === pool ? claim : undefined;
    };
    pool.connect = function connectJoined(this: Pool, callback?: (error: Error | undefined, client: PoolClient, done: () => void) => void) {
      const client = joined()?.lease() as PoolClient | undefined;
      if (!client) {
        return (connectOwn as (...args: unknown[]) => unknown).apply(this, callback ? [callback] : []);
      }
      if (callback) {
        queueMicrotask(() => callback(undefined, client, () => client.release()));
        return undefined;
      }
      return Promise.resolve(client);
    } as Connect;
    pool.query = function queryJoined(this: Pool, ...args: unknown[]) {
      const client = joined()?.handle;
      return client ? (client.query as Query)(...args) : queryOwn.apply(this, args);
    } as Pool['query'];
  }
}

/** The claims' storages of the applications whose handlers run on a Pool, each with the handlers it warned of. */
const WATCHING = new Map<DataLayerHost['storage'], Set<string>>();
function ignoreConnectionError(): void {
  // The statement that meets the failed connection reports it.
}

/** The pg Pool classes that warn of a use inside a handler whose claim is on another Pool. */
const WATCHED_POOL_CLASSES = new WeakSet<object>();

/**
 * Every other Pool of `pool`'s `pg` installation logs a warning, once per handler, when a handler
 * whose claim is on a Pool sends a statement through it.
 */
function warnOnOtherPools(pool: Pool, storage: DataLayerHost['storage']): void {
  if (!WATCHING.has(storage)) {
    WATCHING.set(storage, new Set());
  }
  let prototype = Object.getPrototypeOf(pool) as Record<string, unknown> | null;
  while (prototype && !Object.hasOwn(prototype, 'connect')) {
    prototype = Object.getPrototypeOf(prototype) as Record<string, unknown> | null;
  }
  if (!prototype || WATCHED_POOL_CLASSES.has(prototype)) {
    return;
  }
  WATCHED_POOL_CLASSES.add(prototype);
  const logger = new Logger('Idempotency');
  const watch = (method: 'connect' | 'query') => {
    const own = prototype[method] as Query;
    prototype[method] = function watched(this: Pool, ...args: unknown[]) {
      for (const [claims, warned] of WATCHING) {
        const claim = JoinedClaimConnection.inFlight(claims);
        if (claim && claim.owner !== this) {
          const { consumer } = claims.getStore()!;
          if (!warned.has(consumer)) {
            warned.add(consumer);
            logger.warn(dataLayerMessages.otherPoolUsed(consumer));
          }
        }
      }
      return own.apply(this, args);
    };
  };
  watch('connect');
  watch('query');
}

/** A pg Pool, told by its shape so that any copy of `pg` is recognised. */
function isPool(candidate: unknown): candidate is Pool {
  const pool = candidate as Partial<Pool> | null | undefined;
  return typeof pool === 'object' && pool !== null && typeof pool.connect === 'function' && typeof pool.query === 'function' && typeof pool.idleCount === 'number';
}

