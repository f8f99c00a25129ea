import type { DiscoveryService, ModuleRef } from '@nestjs/core';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { IsolationLevel } from '../options/handler-values.js';

/**
 * What one statement of a multi-statement query answered (node-postgres's shape).
 * @internal
 */
export interface StatementResult {
  readonly command: string;
  readonly rowCount: number | null;
  readonly rows: unknown[];
}

/**
 * What a parameterised statement outside any claim answered.
 * @internal
 */
export interface QueryResult<Row> {
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

/**
 * Who a transaction claims for, for error messages.
 * @internal
 */
export interface Claimant {
  readonly consumer: string;
  readonly key: string;
}

/**
 * The claim's transaction on one connection of a data layer, from BEGIN (with the claim) to COMMIT
 * (with the record) or ROLLBACK. While it is open, the layer makes the handler's writes join it.
 * @internal
 */
export interface ClaimConnection {
  /** True from BEGIN until COMMIT or ROLLBACK. */
  readonly isOpen: boolean;
  /** The layer's object for this transaction, which `IdempotencyContext` hands to the handler. */
  readonly handle: unknown;
  /** Whether a statement may answer a `void` column (node-postgres reads one; Prisma's raw queries do not). */
  readonly readsVoid: boolean;
  /** A value as a PostgreSQL string literal. */
  literal(value: string): string;
  /** BEGIN at `isolationLevel` (unset: the layer's default, else READ COMMITTED), then `statements`; their results. */
  begin(isolationLevel: IsolationLevel | undefined, statements: string[]): Promise<StatementResult[]>;
  /**
   * `statements`, then COMMIT, after checking that the transaction is still the claim's and alive;
   * `undoWork`: the handler's writes are first rolled back to the savepoint taken after the claim.
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
   * Absent where the claim runs in the caller's transaction.
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

/**
 * What the module gives a data layer when it attaches it to the application.
 * @internal
 */
export interface DataLayerHost {
  readonly moduleRef: ModuleRef;
  readonly discovery: DiscoveryService;
  /** Holds the claim of the handler that runs, with its `ClaimConnection` as `transaction`. */
  readonly storage: AsyncLocalStorage<{ readonly consumer: string; readonly transaction?: { readonly isOpen: boolean } }>;
}

/**
 * A data layer the processed-messages store is reached through, and whose transactions the
 * handlers' writes join: `TypeOrmDataLayer` (the default) or `PgPoolDataLayer` (plain `pg`, and
 * Drizzle, Kysely and Prisma on a `pg` Pool). Pass one as the module's `dataLayer` option.
 */
export interface IdempotencyDataLayer {
  /** The layer's name, for messages. */
  readonly name: string;
  /** @internal Finds what the layer needs in the application; once, before any other call. */
  attach(host: DataLayerHost): void;
  /** @internal Called at the module's init: resolves the layer's instance and starts the joins. */
  start(): Promise<void>;
  /** @internal One parameterised statement in a transaction of its own, outside any claim. */
  query<Row>(text: string, parameters?: readonly unknown[]): Promise<QueryResult<Row>>;
  /**
   * @internal A connection for a claim, waiting at most `timeoutMs` for one.
   * @throws IdempotencyUnavailableError when none comes in time or the server cannot be reached.
   */
  connect(timeoutMs: number, claimant: Claimant): Promise<ClaimConnection>;
  /** @internal How to create what the store lacks, in this layer's terms (its migrations, or the shipped SQL). */
  readonly schemaAdvice: 'typeorm-migrations' | 'sql-files';
}
