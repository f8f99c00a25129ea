import type { DataSource, QueryRunner } from 'typeorm';
import type { IsolationLevel } from '../options/handler-values.js';
import { IdempotencyClaimTransactionError, IdempotencyTransactionAbortedError, IdempotencyUnavailableError } from '../errors/idempotency.errors.js';
import { within } from '../duration/within.js';
import { claimMessages } from './claim.messages.js';
import { UNDO_WORK } from './claim.queries.js';
import {
  connectClient,
  createPrimaryQueryRunner,
  defaultIsolationLevel,
  markTransaction,
  hasIdleConnectionFree,
  poolFigures,
  transactionDepth,
  unlistConnectedRunner,
  type PostgresConnection,
  type StatementResult,
} from '../typeorm/typeorm-internals.js';

/** The methods of TypeORM's query runner that the claim's transaction guards, as TypeORM defines them. */
type GuardedMethods = Pick<QueryRunner, 'startTransaction' | 'commitTransaction' | 'rollbackTransaction' | 'release'>;

/** Who the transaction claims for, for error messages. */
interface Claimant {
  readonly consumer: string;
  readonly key: string;
}

const ISOLATION_STRENGTH: Record<IsolationLevel, number> = {
  'READ UNCOMMITTED': 0,
  'READ COMMITTED': 0,
  'REPEATABLE READ': 1,
  SERIALIZABLE: 2,
};

/** The claim each guarded query runner belongs to. */
const CLAIM_OF_RUNNER = new WeakMap<QueryRunner, ClaimTransaction>();

/**
 * The methods a claim's query runner answers with in place of TypeORM's, the same functions for
 * every claim: each finds its runner's claim.
 */
const GUARDED_METHODS: GuardedMethods = {
  startTransaction(this: QueryRunner, isolationLevel?: IsolationLevel) {
    return CLAIM_OF_RUNNER.get(this)!.startTransaction(isolationLevel);
  },
  commitTransaction(this: QueryRunner) {
    return CLAIM_OF_RUNNER.get(this)!.commitTransaction();
  },
  rollbackTransaction(this: QueryRunner) {
    return CLAIM_OF_RUNNER.get(this)!.rollbackTransaction();
  },
  // TypeORM releases a runner it took from createQueryRunner(); the claim's runner stays with the claim.
  release: async () => undefined,
};

/**
 * The claim's transaction on one TypeORM `QueryRunner`. Its BEGIN travels with the claim and its
 * COMMIT with the recorded response, each pair as one multi-statement simple query, so the claim
 * adds no round trip to the handler's transaction. The query runner is marked as in a
 * transaction, as `startTransaction()` would, so the handler's `manager.save()` joins it and a
 * nested `manager.transaction()` becomes a savepoint. The transaction belongs to the claim: the
 * handler cannot commit, roll back or release it, nor raise its isolation level.
 * @internal
 */
export class ClaimTransaction {
  private open = false;
  private isolationLevel: IsolationLevel = 'READ COMMITTED';

  private constructor(
    readonly dataSource: DataSource,
    readonly queryRunner: QueryRunner,
    private readonly client: PostgresConnection,
    private readonly claimant: Claimant,
    /** TypeORM's methods of the runner, called with it as `this`. */
    private readonly own: GuardedMethods,
  ) {}

  /**
   * Takes a connection from the data source's pool, waiting at most `timeoutMs`.
   * @throws IdempotencyUnavailableError when none comes in time or the server cannot be reached.
   */
  static async connect(dataSource: DataSource, timeoutMs: number, claimant: Claimant): Promise<ClaimTransaction> {
    // Not dataSource.createQueryRunner(): inside a handler that one hands out the claim's own runner.
    const queryRunner = createPrimaryQueryRunner(dataSource);
    // With an idle connection free the pool hands it over at its next tick: no wait to bound, no timer to arm.
    const idleFree = hasIdleConnectionFree(dataSource);
    try {
      const connecting = connectClient(queryRunner);
      const client = idleFree ? await connecting : await within(connecting, timeoutMs);
      if (!client) {
        // The pool still hands the connection over later; give it straight back then.
        connecting.then(() => queryRunner.release(), () => undefined);
        throw new IdempotencyUnavailableError(
          claimMessages.noConnection(claimant.consumer, claimant.key, timeoutMs, poolFigures(dataSource)),
          claimant.consumer,
          claimant.key,
        );
      }
      return ClaimTransaction.guard(dataSource, queryRunner, client, claimant);
    } catch (error) {
      if (error instanceof IdempotencyUnavailableError) {
        throw error;
      }
      await queryRunner.release();
      throw new IdempotencyUnavailableError(
        claimMessages.connectFailed(claimant.consumer, claimant.key, (error as Error).message),
        claimant.consumer,
        claimant.key,
        { cause: error },
      );
    }
  }

  private static guard(dataSource: DataSource, queryRunner: QueryRunner, client: PostgresConnection, claimant: Claimant): ClaimTransaction {
    const { startTransaction, commitTransaction, rollbackTransaction, release } = queryRunner;
    const own: GuardedMethods = { startTransaction, commitTransaction, rollbackTransaction, release };
    const transaction = new ClaimTransaction(dataSource, queryRunner, client, claimant, own);
    // On shutdown TypeORM's driver releases the runners it lists until none is left; this one
    // ignores release() from others, so listed it would keep the shutdown looping for ever.
    // Unlisted, the pool's end waits for the claim to settle and give its connection back.
    unlistConnectedRunner(dataSource, queryRunner);
    CLAIM_OF_RUNNER.set(queryRunner, transaction);
    Object.assign(queryRunner, GUARDED_METHODS);
    return transaction;
  }

  /** True from BEGIN until COMMIT or ROLLBACK. */
  get isOpen(): boolean {
    return this.open;
  }

  /** A value as a PostgreSQL string literal. */
  literal(value: string): string {
    return this.client.escapeLiteral(value);
  }

  /**
   * BEGIN at `isolationLevel` (unset: the data source's default, else READ COMMITTED), then
   * `statements`, in one round trip; returns the statements' results.
   */
  async begin(isolationLevel: IsolationLevel | undefined, statements: string[]): Promise<StatementResult[]> {
    this.isolationLevel = isolationLevel ?? defaultIsolationLevel(this.dataSource) ?? 'READ COMMITTED';
    this.markTransaction(true);
    const results = await this.send([`BEGIN ISOLATION LEVEL ${this.isolationLevel}`, ...statements]);
    return results.slice(1);
  }

  /**
   * `statements`, then COMMIT, in one round trip, after checking that the transaction is still
   * the claim's and still alive. With `undoWork`, the handler's writes are first rolled back to the
   * savepoint taken after the claim (`WORK_SAVEPOINT`), which also revives a transaction a failed
   * statement aborted.
   * @throws IdempotencyTransactionAbortedError when PostgreSQL aborted it (a failed statement the
   * handler carried on after); nothing is committed.
   * @throws IdempotencyClaimTransactionError when the handler ended it with a bare COMMIT or ROLLBACK.
   */
  async commit(statements: string[], undoWork = false): Promise<void> {
    // The status can lag a statement that just failed (pg rejects it before PostgreSQL's
    // ReadyForQuery arrives), so COMMIT's command tag below is the check that always holds.
    const status = this.client.getTransactionStatus();
    if (status === 'E' && !undoWork) {
      throw new IdempotencyTransactionAbortedError(this.claimant.consumer, this.claimant.key);
    }
    if (status !== 'T' && status !== 'E') {
      throw this.claimError(claimMessages.claimTransactionEnded(this.claimant.consumer));
    }
    const results = await this.send([...(undoWork ? [UNDO_WORK] : []), ...statements, 'COMMIT']);
    this.markTransaction(false);
    if (results[results.length - 1].command !== 'COMMIT') {
      throw new IdempotencyTransactionAbortedError(this.claimant.consumer, this.claimant.key);
    }
  }

  /** `statements`, then ROLLBACK, in one round trip. */
  async rollback(statements: string[] = []): Promise<StatementResult[]> {
    const results = await this.send([...statements, 'ROLLBACK']);
    this.markTransaction(false);
    return results.slice(0, -1);
  }

  /**
   * Rolls back whatever is open and returns the connection to the pool. A connection that failed
   * is discarded by the pool instead of being reused.
   */
  async close(): Promise<void> {
    if (this.open && !this.queryRunner.isReleased) {
      await this.rollback().catch(() => undefined);
    }
    this.markTransaction(false);
    await this.own.release.call(this.queryRunner);
  }

  /** `startTransaction()` on the claim's runner: a savepoint, never a level stronger than the claim's. */
  startTransaction(isolationLevel: IsolationLevel | undefined): Promise<void> {
    this.refuseStrongerIsolation(isolationLevel ?? defaultIsolationLevel(this.dataSource));
    return this.own.startTransaction.call(this.queryRunner, isolationLevel);
  }

  /** `commitTransaction()` on the claim's runner: a savepoint's release, never the claim's COMMIT. */
  commitTransaction(): Promise<void> {
    this.refuseAtClaimLevel(transactionDepth(this.queryRunner), 'commitTransaction()');
    return this.own.commitTransaction.call(this.queryRunner);
  }

  /** `rollbackTransaction()` on the claim's runner: a savepoint's rollback, never the claim's. */
  rollbackTransaction(): Promise<void> {
    this.refuseAtClaimLevel(transactionDepth(this.queryRunner), 'rollbackTransaction()');
    return this.own.rollbackTransaction.call(this.queryRunner);
  }

  private refuseAtClaimLevel(depth: number, call: string): void {
    if (depth <= 1) {
      throw this.claimError(claimMessages.claimTransactionControlled(this.claimant.consumer, call));
    }
  }

  private refuseStrongerIsolation(requested: IsolationLevel | undefined): void {
    if (this.open && requested && ISOLATION_STRENGTH[requested] > ISOLATION_STRENGTH[this.isolationLevel]) {
      throw this.claimError(claimMessages.strongerIsolationRequested(this.claimant.consumer, requested, this.isolationLevel));
    }
  }

  private claimError(message: string): IdempotencyClaimTransactionError {
    return new IdempotencyClaimTransactionError(message, this.claimant.consumer, this.claimant.key);
  }

  private async send(statements: string[]): Promise<StatementResult[]> {
    const result = (await this.client.query(statements.join(';\n'))) as StatementResult | StatementResult[];
    return Array.isArray(result) ? result : [result];
  }

  private markTransaction(active: boolean): void {
    this.open = active;
    markTransaction(this.queryRunner, active);
  }
}
