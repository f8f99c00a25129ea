import type { PoolClient, QueryResult } from 'pg';
import type { DataSource, QueryRunner } from 'typeorm';

/** The fields by which TypeORM's query runner knows a transaction is open (BaseQueryRunner). */
interface TransactionState {
  isTransactionActive: boolean;
  transactionDepth: number;
}

/**
 * A READ COMMITTED transaction on one TypeORM `QueryRunner` whose BEGIN travels with the claim and
 * whose COMMIT travels with the recorded response: each pair is one multi-statement simple query,
 * so idempotency adds no round trip to the handler's transaction. The query runner is marked as in
 * a transaction, exactly as `startTransaction()` would, so the handler's `manager.save()` joins it
 * and a nested `manager.transaction()` becomes a savepoint.
 */
export class ClaimTransaction {
  private constructor(
    readonly queryRunner: QueryRunner,
    private readonly client: PoolClient,
  ) {}

  /** Takes a connection from the data source's pool. */
  static async connect(dataSource: DataSource): Promise<ClaimTransaction> {
    const queryRunner = dataSource.createQueryRunner();
    try {
      return new ClaimTransaction(queryRunner, (await queryRunner.connect()) as PoolClient);
    } catch (error) {
      await queryRunner.release();
      throw error;
    }
  }

  /** A value as a PostgreSQL string literal. */
  literal(value: string): string {
    return this.client.escapeLiteral(value);
  }

  /** BEGIN, then `statements`, in one round trip; returns the statements' results. */
  async begin(statements: string[]): Promise<QueryResult[]> {
    this.markTransaction(true);
    const results = await this.send(['BEGIN ISOLATION LEVEL READ COMMITTED', ...statements]);
    return results.slice(1);
  }

  /** `statements`, then COMMIT, in one round trip. */
  async commit(statements: string[]): Promise<QueryResult[]> {
    const results = await this.send([...statements, 'COMMIT']);
    this.markTransaction(false);
    return results.slice(0, -1);
  }

  /** `statements`, then ROLLBACK, in one round trip. */
  async rollback(statements: string[] = []): Promise<QueryResult[]> {
    const results = await this.send([...statements, 'ROLLBACK']);
    this.markTransaction(false);
    return results.slice(0, -1);
  }

  /**
   * Rolls back whatever is open and returns the connection to the pool. A connection that failed
   * is discarded by the pool instead of being reused.
   */
  async close(): Promise<void> {
    if (this.queryRunner.isTransactionActive && !this.queryRunner.isReleased) {
      await this.rollback().catch(() => undefined);
      this.markTransaction(false);
    }
    await this.queryRunner.release();
  }

  private async send(statements: string[]): Promise<QueryResult[]> {
    const result = (await this.client.query(statements.join(';\n'))) as QueryResult | QueryResult[];
    return Array.isArray(result) ? result : [result];
  }

  private markTransaction(active: boolean): void {
    const state = this.queryRunner as unknown as TransactionState;
    state.isTransactionActive = active;
    state.transactionDepth = active ? 1 : 0;
  }
}
