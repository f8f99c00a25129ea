import pg from 'pg';
import type { ClaimConnection, StatementResult, TransactionStatements } from './data-layer.js';
import { UNDO_WORK } from './sql-claim-connection.js';

/** The savepoint the claim takes in the caller's transaction, so that a failed claim leaves that transaction usable. */
const CLAIM_SAVEPOINT = 'idempotency_claim';

/**
 * A claim inside a transaction the caller opened (`run()` with `transaction`): each statement goes
 * through the caller's own statement function, one per call. The claim is taken after a savepoint,
 * so a claim that fails (a twin in flight holds the row) is rolled back to it and leaves the
 * caller's transaction usable; the record is written in the caller's transaction, which the
 * caller commits: nothing of the claim is durable until then.
 * @internal
 */
export class CallerClaimConnection implements ClaimConnection {
  readonly handle = undefined;
  /** The caller's statement function may be Prisma's, whose raw queries cannot read a `void` column. */
  readonly readsVoid = false;
  private open = false;
  private deferred: string[] = [];

  constructor(private readonly statements: TransactionStatements) {}

  get isOpen(): boolean {
    return this.open;
  }

  literal(value: string): string {
    return pg.escapeLiteral(value);
  }

  async begin(_isolationLevel: unknown, statements: string[]): Promise<StatementResult[]> {
    await this.send(`SAVEPOINT ${CLAIM_SAVEPOINT}`);
    this.open = true;
    return this.sendAll(statements);
  }

  async commit(statements: string[], undoWork = false): Promise<void> {
    const deferred = undoWork ? [UNDO_WORK] : this.deferred;
    this.deferred = [];
    await this.sendAll([...deferred, ...statements, `RELEASE SAVEPOINT ${CLAIM_SAVEPOINT}`]);
    this.open = false;
  }

  defer(statement: string): void {
    this.deferred.push(statement);
  }

  async rollback(statements: string[] = []): Promise<StatementResult[]> {
    const results = await this.sendAll(statements);
    await this.close();
    return results;
  }

  async close(): Promise<void> {
    this.deferred = [];
    if (this.open) {
      this.open = false;
      await this.send(`ROLLBACK TO SAVEPOINT ${CLAIM_SAVEPOINT}`);
    }
  }

  private async sendAll(statements: string[]): Promise<StatementResult[]> {
    const results: StatementResult[] = [];
    for (const statement of statements) {
      results.push(await this.send(statement));
    }
    return results;
  }

  /** One statement; its rows as node-postgres gives them (bytes as a Buffer, which Prisma gives as a Uint8Array). */
  private async send(statement: string): Promise<StatementResult> {
    const answer = await this.statements(statement);
    const rows = (Array.isArray(answer) ? answer : ((answer as { rows?: unknown[] } | undefined)?.rows ?? [])) as Record<string, unknown>[];
    for (const row of rows) {
      for (const [column, value] of Object.entries(row)) {
        if (value instanceof Uint8Array && !Buffer.isBuffer(value)) {
          row[column] = Buffer.from(value);
        }
      }
    }
    return { command: statement.split(' ', 1)[0].toUpperCase(), rowCount: rows.length, rows };
  }
}
