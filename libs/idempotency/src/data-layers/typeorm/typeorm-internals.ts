import type { DataSource, QueryRunner } from 'typeorm';
import type { IsolationLevel } from '../../options/handler-values.js';
import type { ClaimClient } from '../sql-claim-connection.js';

/*
 * What the module relies on in TypeORM beyond its documented API, and nothing else. These parts
 * read the same in the sources of TypeORM 0.3.28 to 0.3.31 and 1.1 (BaseQueryRunner,
 * PostgresQueryRunner, PostgresDriver); `typeorm-internals.e2e-spec.ts` beside it checks each one
 * on the installed version and fails when an upgrade changes it.
 */

/** The fields by which BaseQueryRunner knows a transaction is open (`transactionDepth` is protected). */
interface TransactionState {
  isTransactionActive: boolean;
  transactionDepth: number;
}

/**
 * A query runner on the primary straight from the driver, with its own entity manager, as
 * `dataSource.createQueryRunner()` would build it, but without going through that method (which
 * the module replaces on the claims' data source).
 * @internal
 */
export function createPrimaryQueryRunner(dataSource: DataSource): QueryRunner {
  const queryRunner = dataSource.driver.createQueryRunner('master');
  Object.assign(queryRunner, { manager: dataSource.createEntityManager(queryRunner) });
  return queryRunner;
}

/**
 * Takes a pooled connection for `queryRunner` and resolves to its node-postgres client.
 * @internal
 */
export function connectClient(queryRunner: QueryRunner): Promise<ClaimClient> {
  return queryRunner.connect() as Promise<ClaimClient>;
}

/**
 * Marks `queryRunner` as in a transaction at depth 1, as its `startTransaction()` would after a
 * BEGIN (then a nested `startTransaction()` opens a savepoint), or as out of one.
 * @internal
 */
export function markTransaction(queryRunner: QueryRunner, active: boolean): void {
  const state = queryRunner as unknown as TransactionState;
  state.isTransactionActive = active;
  state.transactionDepth = active ? 1 : 0;
}

/**
 * How deep `queryRunner`'s transactions are nested: 1 in the outermost one, more in savepoints.
 * @internal
 */
export function transactionDepth(queryRunner: QueryRunner): number {
  return (queryRunner as unknown as TransactionState).transactionDepth;
}

/**
 * Takes `queryRunner` off the list of connected runners that the PostgreSQL driver releases one
 * by one on shutdown until none is left.
 * @internal
 */
export function unlistConnectedRunner(dataSource: DataSource, queryRunner: QueryRunner): void {
  const listed = (dataSource.driver as unknown as { connectedQueryRunners: QueryRunner[] }).connectedQueryRunners;
  const index = listed.indexOf(queryRunner);
  if (index !== -1) {
    listed.splice(index, 1);
  }
}

/**
 * Whether the primary's pool (a pg `Pool`) holds more idle connections than requests waiting for
 * one: a request for a connection made now is then handed an idle one at the pool's next tick.
 * @internal
 */
export function hasIdleConnectionFree(dataSource: DataSource): boolean {
  const pool = primaryPool(dataSource);
  return (pool?.idleCount ?? 0) > (pool?.waitingCount ?? Number.POSITIVE_INFINITY);
}

/**
 * How big the data source's pool is and how many wait for a connection of it, for error messages.
 * @internal
 */
export function poolFigures(dataSource: DataSource): { size?: number; waiting?: number } {
  const pool = primaryPool(dataSource);
  return { size: pool?.options?.max, waiting: pool?.waitingCount };
}

/** What the module reads of a pg `Pool`. */
interface PoolFigures {
  options?: { max?: number };
  idleCount?: number;
  waitingCount?: number;
}

/** The PostgreSQL driver's pool on the primary. */
function primaryPool(dataSource: DataSource): PoolFigures | undefined {
  return (dataSource.driver as unknown as { master?: PoolFigures }).master;
}

/**
 * The data source's `isolationLevel` option: TypeORM 1.x starts transactions at it; 0.3 has no
 * such option, so there it is unset unless given untyped, and TypeORM ignores it.
 * @internal
 */
export function defaultIsolationLevel(dataSource: DataSource): IsolationLevel | undefined {
  return (dataSource.options as { isolationLevel?: IsolationLevel }).isolationLevel;
}
