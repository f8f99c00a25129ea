import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import type { IsolationLevel } from '../../options/handler-values.js';
import { takeConnection } from '../take-connection.js';
import type { Claimant } from '../data-layer.js';
import { SqlClaimConnection, type ClaimClient } from '../sql-claim-connection.js';
import {
  connectClient,
  createPrimaryQueryRunner,
  defaultIsolationLevel,
  markTransaction,
  hasIdleConnectionFree,
  poolFigures,
  transactionDepth,
  unlistConnectedRunner,
} from './typeorm-internals.js';

/** The methods of TypeORM's query runner that the claim's transaction guards, as TypeORM defines them. */
type GuardedMethods = Pick<QueryRunner, 'query' | 'startTransaction' | 'commitTransaction' | 'rollbackTransaction' | 'release'>;

/** The claim each guarded query runner, or lease of one, belongs to. */
const CLAIM_OF_RUNNER = new WeakMap<QueryRunner, TypeOrmClaimConnection>();

/**
 * The methods a claim's query runner answers with in place of TypeORM's, the same functions for
 * every claim: each finds its runner's claim, and passes the lease it was called on.
 */
const GUARDED_METHODS: GuardedMethods = {
  query(this: QueryRunner, statement: string, parameters?: unknown[], structured?: boolean) {
    return CLAIM_OF_RUNNER.get(this)!.query(this, statement, parameters, structured);
  },
  startTransaction(this: QueryRunner, isolationLevel?: IsolationLevel) {
    return CLAIM_OF_RUNNER.get(this)!.startTransaction(this, isolationLevel);
  },
  commitTransaction(this: QueryRunner) {
    return CLAIM_OF_RUNNER.get(this)!.commitTransaction(this);
  },
  rollbackTransaction(this: QueryRunner) {
    return CLAIM_OF_RUNNER.get(this)!.rollbackTransaction(this);
  },
  // TypeORM releases a runner it took from createQueryRunner(); the claim's runner stays with the claim.
  release: async () => undefined,
};

/**
 * The claim's transaction on one TypeORM `QueryRunner`. The query runner is marked as in a
 * transaction, as `startTransaction()` would, so the handler's `manager.save()` joins it and a
 * nested `manager.transaction()` becomes a savepoint, as does a BEGIN sent as SQL. Each
 * `createQueryRunner()` during the claim gets a lease of the runner (`lease()`), so that two
 * `dataSource.transaction()` calls at once take turns rather than share one savepoint stack. The
 * transaction belongs to the claim: the handler cannot commit, roll back or release it (with
 * TypeORM's methods or with SQL), nor raise its isolation level.
 * @internal
 */
export class TypeOrmClaimConnection extends SqlClaimConnection {
  private constructor(
    readonly dataSource: DataSource,
    readonly queryRunner: QueryRunner,
    client: ClaimClient,
    claimant: Claimant,
    waitMs: number,
    /** TypeORM's methods of the runner, called with it (or a lease of it) as `this`. */
    private readonly own: GuardedMethods,
  ) {
    super(client, claimant, waitMs);
  }

  /** The handler's object for the claim's transaction: its query runner. */
  get handle(): QueryRunner {
    return this.queryRunner;
  }

  /**
   * Takes a connection from the data source's pool, waiting at most `timeoutMs`.
   * @throws IdempotencyUnavailableError when none comes in time or the server cannot be reached.
   */
  static async connect(dataSource: DataSource, timeoutMs: number, claimant: Claimant): Promise<TypeOrmClaimConnection> {
    // Not dataSource.createQueryRunner(): inside a handler that one hands out the claim's own runner.
    const queryRunner = createPrimaryQueryRunner(dataSource);
    const client = await takeConnection(
      {
        take: async () => {
          try {
            return await connectClient(queryRunner);
          } catch (error) {
            await queryRunner.release();
            throw error;
          }
        },
        giveBack: () => queryRunner.release(),
        // With an idle connection free the pool hands it over at its next tick: no wait to bound, no timer to arm.
        idleFree: hasIdleConnectionFree(dataSource),
        figures: () => poolFigures(dataSource),
      },
      timeoutMs,
      claimant,
    );
    const { query, startTransaction, commitTransaction, rollbackTransaction, release } = queryRunner;
    const connection = new TypeOrmClaimConnection(dataSource, queryRunner, client, claimant, timeoutMs, { query, startTransaction, commitTransaction, rollbackTransaction, release });
    // On shutdown TypeORM's driver releases the runners it lists until none is left; this one
    // ignores release() from others, so listed it would keep the shutdown looping for ever.
    // Unlisted, the pool's end waits for the claim to settle and give its connection back.
    unlistConnectedRunner(dataSource, queryRunner);
    CLAIM_OF_RUNNER.set(queryRunner, connection);
    Object.assign(queryRunner, GUARDED_METHODS);
    return connection;
  }

  override async close(): Promise<void> {
    if (this.queryRunner.isReleased) {
      // TypeORM released it after its connection failed: nothing is left to roll back.
      this.marked(false);
      return;
    }
    await super.close();
  }

  /**
   * A runner for one `createQueryRunner()` during the claim: the claim's runner, with an entity
   * manager of its own, whose transactions take turns with other leases' (see `NestedTransactions`).
   */
  lease(): QueryRunner {
    const runner = this.queryRunner;
    let manager: EntityManager | undefined;
    const lease: QueryRunner = new Proxy(runner, {
      get: (target, property) => (property === 'manager' ? (manager ??= this.dataSource.createEntityManager(lease)) : Reflect.get(target, property, target)),
      set: (target, property, value) => Reflect.set(target, property, value, target),
    });
    CLAIM_OF_RUNNER.set(lease, this);
    return lease;
  }

  /** `query()` on a lease of the claim's runner: a BEGIN, COMMIT or ROLLBACK sent as SQL is a savepoint's, never the claim's own. */
  query(lease: QueryRunner, statement: string, parameters: unknown[] | undefined, structured: boolean | undefined): Promise<never> {
    let sent: string | Promise<string> | undefined;
    try {
      sent = this.inClaim(statement, lease);
    } catch (error) {
      return Promise.reject(error);
    }
    const run = (text: string) => this.inTurn(() => (this.own.query as (...args: unknown[]) => Promise<never>).call(lease, text, parameters, structured));
    return typeof sent === 'object' ? sent.then(run) : run(sent ?? statement);
  }

  /** `startTransaction()` on a lease of the claim's runner: a savepoint, once other leases' have ended, never a level stronger than the claim's. */
  async startTransaction(lease: QueryRunner, isolationLevel: IsolationLevel | undefined): Promise<void> {
    this.refuseStrongerIsolation(isolationLevel ?? defaultIsolationLevel(this.dataSource));
    await this.nested.open(lease);
    try {
      await this.own.startTransaction.call(lease, isolationLevel);
    } catch (error) {
      this.nested.close(lease, true);
      throw error;
    }
  }

  /** `commitTransaction()` on a lease of the claim's runner: a savepoint's release, never the claim's COMMIT. */
  async commitTransaction(lease: QueryRunner): Promise<void> {
    this.refuseAtClaimLevel(transactionDepth(this.queryRunner) <= 1 || !this.nested.owns(lease), 'commitTransaction()');
    try {
      await this.own.commitTransaction.call(lease);
    } finally {
      this.nested.close(lease, true);
    }
  }

  /** `rollbackTransaction()` on a lease of the claim's runner: a savepoint's rollback, never the claim's. */
  async rollbackTransaction(lease: QueryRunner): Promise<void> {
    this.refuseAtClaimLevel(transactionDepth(this.queryRunner) <= 1 || !this.nested.owns(lease), 'rollbackTransaction()');
    try {
      await this.own.rollbackTransaction.call(lease);
    } finally {
      this.nested.close(lease, false);
    }
  }

  protected defaultIsolationLevel(): IsolationLevel | undefined {
    return defaultIsolationLevel(this.dataSource);
  }

  protected release(): Promise<void> {
    return this.own.release.call(this.queryRunner);
  }

  protected marked(active: boolean): void {
    markTransaction(this.queryRunner, active);
  }
}
