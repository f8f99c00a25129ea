import type { DiscoveryService, ModuleRef } from '@nestjs/core';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { IsolationLevel } from '../options/handler-values.js';
import type { StatementResult } from '../dialects/store-dialect.js';

export type { StatementResult } from '../dialects/store-dialect.js';

/** What a parameterised statement outside any claim answered. */
export interface QueryResult<Row> {
  /** The rows it returned, as objects by column name. */
  readonly rows: Row[];
  /** Rows the statement inserted, updated, deleted or returned. */
  readonly rowCount: number;
}

/**
 * What the module uses of a `pg` Pool; pg's `Pool` is one. Declared here so that the package's
 * types need no `@types/pg`.
 */
export interface PgPool {
  connect(): Promise<PgPoolClient>;
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
  readonly idleCount: number;
  readonly waitingCount: number;
}

/**
 * A client of a `pg` Pool, as the module types it; pg's `PoolClient` is one (cast it to that to
 * reach the rest of its API).
 */
export interface PgPoolClient {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
  release(destroy?: boolean | Error): void;
}

/**
 * Runs one SQL statement (without parameters) in a transaction the caller opened, and answers its
 * rows (an array, or a result whose `rows` is one), as each data layer runs raw SQL: `pg`
 * `(statement) => client.query(statement)`, TypeORM `(statement) => manager.query(statement)`,
 * Prisma `(statement) => tx.$queryRawUnsafe(statement)`, Drizzle
 * `(statement) => tx.execute(sql.raw(statement))` and Kysely `(statement) => sql.raw(statement).execute(trx)`
 * (`sql` from `drizzle-orm`, from `kysely`).
 */
export type TransactionStatements = (sql: string) => Promise<unknown>;

/** Who a transaction claims for: what a layer's errors name (`IdempotencyUnavailableError`'s `consumer` and `key`). */
export interface Claimant {
  /** The consumer the claim is scoped to. */
  readonly consumer: string;
  /** The message's idempotency key. */
  readonly key: string;
}

/**
 * The claim's transaction on one connection of a data layer, from BEGIN (with the claim) to COMMIT
 * (with the record) or ROLLBACK: what `IdempotencyDataLayer.connect()` answers. The module sends
 * its own statements (the claim, the record, the outbox's) as SQL text without parameters, each
 * list meant to travel with the BEGIN or the COMMIT in one round trip (one multi-statement simple
 * query) where the driver can. While it is open, the layer makes the handler's writes join it
 * (through `handle`, and through the layer's own objects if it can), refuses a COMMIT or ROLLBACK
 * of it sent by the handler, and checks at `commit()` that PostgreSQL did not abort it.
 * `dataLayerContract()` of `nestjs-idempotent-consumer/testing` proves a layer does.
 */
export interface ClaimConnection {
  /** True from `begin()` until `commit()` or `rollback()` ended the transaction. */
  readonly isOpen: boolean;
  /** The layer's object for this transaction, which `IdempotencyContext` hands to the handler. */
  readonly handle: unknown;
  /** Whether a statement may answer a `void` column (node-postgres reads one; Prisma's raw queries do not). */
  readonly readsVoid: boolean;
  /** A value as a PostgreSQL string literal, quotes included (node-postgres's `escapeLiteral`). */
  literal(value: string): string;
  /**
   * BEGIN at `isolationLevel` (unset: the layer's default, else READ COMMITTED), then `statements`;
   * their results, one per statement, in order (not the BEGIN's).
   */
  begin(isolationLevel: IsolationLevel | undefined, statements: string[]): Promise<StatementResult[]>;
  /**
   * The deferred statements (`defer()`), `statements`, then COMMIT, after checking that the
   * transaction is still the claim's and alive; `undoWork`: the transaction may be aborted, and
   * instead of the deferred statements the handler's writes are rolled back to the savepoint the
   * claim's statements took (`ROLLBACK TO SAVEPOINT idempotent_handler_work`).
   * @throws IdempotencyTransactionAbortedError when PostgreSQL aborted it; nothing is committed.
   * @throws IdempotencyClaimTransactionError when the handler ended it itself.
   */
  commit(statements: string[], undoWork?: boolean): Promise<void>;
  /**
   * Adds a statement to the claim's COMMIT (an outbox message): sent in the same round trip, before
   * the record; dropped when `commit()` undoes the handler's work or the claim rolls back.
   */
  defer(statement: string): void;
  /**
   * Makes this connection a LISTEN session on `channel` (the outbox relay's wake-up), until the
   * function it resolves to (UNLISTEN) is called, before `close()`. `lost` is told once when the connection fails.
   * Absent where the claim runs in the caller's transaction; a layer without it runs the outbox
   * relay with `relay: { listen: false }` (it then polls).
   */
  listen?(channel: string, notified: () => void, lost: (error: Error) => void): Promise<() => Promise<void>>;
  /** `statements`, then ROLLBACK; their results. */
  rollback(statements?: string[]): Promise<StatementResult[]>;
  /** Rolls back whatever is open and gives the connection back (a failed one is discarded). */
  close(): Promise<void>;
}

/**
 * The token of the AsyncLocalStorage that holds the claim of the handler that runs: what
 * `IdempotencyContext` answers, and what the layers read to hand the claim's connection to the
 * handler's writes.
 * @internal
 */
export const CLAIM_STORAGE = Symbol('IDEMPOTENCY:CLAIM_STORAGE');

/** What the module gives a data layer when it attaches it to the application. */
export interface DataLayerHost {
  /** The application's providers: where a layer finds its instance by token (`moduleRef.get(token, { strict: false })`). */
  readonly moduleRef: ModuleRef;
  /** The application's providers and controllers, for a layer that must find all instances of a kind. */
  readonly discovery: DiscoveryService;
  /**
   * Holds the claim of the handler that runs (and of what it calls), with its `ClaimConnection` as
   * `transaction` while the claim is transactional: a layer reads it to hand the claim's
   * connection to the handler's writes. `transaction` is absent in lease mode; in `run()` given a
   * transaction of the caller's, it is not one of the layer's.
   */
  readonly storage: AsyncLocalStorage<{ readonly consumer: string; readonly transaction?: ClaimConnection }>;
}

/**
 * A data layer the processed-messages store is reached through, and whose transactions the
 * handlers' writes join: `TypeOrmDataLayer` (the default), `PgPoolDataLayer` (plain `pg`, and
 * Drizzle, Kysely and Prisma on a `pg` Pool), `MikroOrmDataLayer`, on MariaDB `Mysql2PoolDataLayer`
 * and `MariaDbPoolDataLayer` (Prisma on the `mariadb` connector), or one of yours on PostgreSQL
 * (knex, postgres.js, Sequelize...), proven by `dataLayerContract()` of
 * `nestjs-idempotent-consumer/testing`. Pass one as the module's `dataLayer` option; the module
 * checks at start-up that it has every member below.
 */
export interface IdempotencyDataLayer {
  /** The layer's name, for messages. */
  readonly name: string;
  /** Finds what the layer needs in the application; once, before any other call, when the module is built. */
  attach(host: DataLayerHost): void;
  /** Called at the module's init: resolves the layer's instance (from `host.moduleRef`) and starts the joins. */
  start(): Promise<void>;
  /**
   * One parameterised statement (`$1`, `$2`... placeholders): in a transaction of its own (the
   * purge, the health figures, the lease store, the outbox relay's reads), except while a claim of
   * this layer is open in the caller's context (`host.storage`'s `transaction`, `isOpen`): then on
   * that claim's connection, in its transaction, as the handler's writes (`IdempotentRunner.run()`
   * inside a handler claims that way).
   */
  query<Row>(text: string, parameters?: readonly unknown[]): Promise<QueryResult<Row>>;
  /**
   * A connection for a claim, not yet in a transaction, waiting at most `timeoutMs` for one.
   * @throws IdempotencyUnavailableError when none comes in time or the server cannot be reached
   * (the delivery is answered 503, or retried later); nothing is claimed.
   */
  connect(timeoutMs: number, claimant: Claimant): Promise<ClaimConnection>;
  /**
   * How a user creates what the store lacks, named in the error when a table is missing at boot:
   * the layer's TypeORM migrations, or the package's SQL files (`npx nestjs-idempotent-consumer-sql`).
   */
  readonly schemaAdvice: 'typeorm-migrations' | 'sql-files';
  /**
   * The database the store is on, whose SQL the module sends through the layer: `'postgres'` when
   * absent, or `'mariadb'` (MariaDB 10.6 or newer: `Mysql2PoolDataLayer`, `MariaDbPoolDataLayer`,
   * `TypeOrmDataLayer` on a `mariadb` or `mysql` data source, `MikroOrmDataLayer` on
   * `@mikro-orm/mariadb`). Read each time it is needed: a layer that finds it out in
   * `start()` or at its first `connect()` may answer `undefined` until then.
   */
  readonly dialect?: 'postgres' | 'mariadb';
}
