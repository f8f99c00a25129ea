import { dataLayerMessages } from './data-layer.messages.js';
import type { IsolationLevel } from '../options/handler-values.js';
import { IdempotencyClaimTransactionError, IdempotencyTransactionAbortedError } from '../errors/idempotency.errors.js';
import type { Claimant, ClaimConnection, StatementResult } from './data-layer.js';
import { NestedTransactions } from './nested-transactions.js';

/**
 * The savepoint a claim takes right after it (for `recordErrors`), and the statement that rolls the
 * handler's writes back to it, leaving the claim's row in place.
 * @internal
 */
export const WORK_SAVEPOINT = 'SAVEPOINT idempotent_handler_work';
/** @internal */
export const UNDO_WORK = 'ROLLBACK TO SAVEPOINT idempotent_handler_work';

/** A statement that starts or ends a transaction, with what follows its keyword; not ROLLBACK TO, COMMIT PREPARED and the like. */
const TRANSACTION_CONTROL = /^\s*(begin|start\s+transaction|commit|end|rollback|abort)\b(?!\s+(?:to|prepared)\b)([^;]*);?\s*$/i;
const ISOLATION = /isolation\s+level\s+(read\s+uncommitted|read\s+committed|repeatable\s+read|serializable)/i;

const ISOLATION_STRENGTH: Record<IsolationLevel, number> = {
  'READ UNCOMMITTED': 0,
  'READ COMMITTED': 0,
  'REPEATABLE READ': 1,
  SERIALIZABLE: 2,
};

/**
 * A node-postgres client, as far as a claim uses it.
 * @internal
 */
export interface ClaimClient {
  query(text: string): Promise<StatementResult | StatementResult[]>;
  escapeLiteral(value: string): string;
  /** The transaction status PostgreSQL reported with its last answer: 'I' idle, 'T' in a transaction, 'E' in a failed one. */
  getTransactionStatus(): string | null;
}

/**
 * The claim's transaction on one node-postgres connection, whichever layer lent it. Its BEGIN
 * travels with the claim and its COMMIT with the recorded response, each pair as one
 * multi-statement simple query, so the claim adds no round trip to the handler's transaction.
 * Each layer says how its connection goes back and how its own objects learn that a transaction is open.
 * @internal
 */
export abstract class SqlClaimConnection implements ClaimConnection {
  private open = false;
  /** The transactions the handler opens inside the claim's, each a savepoint, one lease at a time. */
  protected readonly nested: NestedTransactions;
  /** What the handler's work added to the COMMIT (outbox messages). */
  private deferred: string[] = [];
  /** The handler's statements sent and not yet answered, and the last of them, settled either way. */
  private statementsInFlight = 0;
  private lastStatement: Promise<unknown> | undefined;
  /** The level the claim's BEGIN set. */
  protected isolationLevel: IsolationLevel = 'READ COMMITTED';

  /** @param waitMs How long a transaction of the handler waits for another one's to end (the claim's connection timeout). */
  protected constructor(
    protected readonly client: ClaimClient,
    protected readonly claimant: Claimant,
    waitMs: number,
  ) {
    this.nested = new NestedTransactions(waitMs, (reason, ms) =>
      this.claimError(
        reason === 'waited' ? dataLayerMessages.transactionsOverlapped(claimant.consumer, ms) : dataLayerMessages.foreignWorkRolledBack(claimant.consumer),
      ),
    );
  }

  abstract readonly handle: unknown;
  readonly readsVoid: boolean = true;

  /** The layer's default level for a BEGIN without one. */
  protected abstract defaultIsolationLevel(): IsolationLevel | undefined;

  /** What opens the claim's transaction at `isolationLevel`. */
  protected beginStatements(isolationLevel: IsolationLevel): string[] {
    return [`BEGIN ISOLATION LEVEL ${isolationLevel}`];
  }

  /** Whether the COMMIT's results say it committed: PostgreSQL answers `ROLLBACK` to the COMMIT of an aborted transaction. */
  protected committed(results: StatementResult[]): boolean {
    return results[results.length - 1].command === 'COMMIT';
  }

  /** Gives the connection back to the layer's pool. */
  protected abstract release(): Promise<void>;

  /** Tells the layer's objects that the transaction is open or over. */
  protected abstract marked(active: boolean): void;

  get isOpen(): boolean {
    return this.open;
  }

  literal(value: string): string {
    return this.client.escapeLiteral(value);
  }

  async begin(isolationLevel: IsolationLevel | undefined, statements: string[]): Promise<StatementResult[]> {
    this.isolationLevel = isolationLevel ?? this.defaultIsolationLevel() ?? 'READ COMMITTED';
    this.mark(true);
    const opening = this.beginStatements(this.isolationLevel);
    const results = await this.send([...opening, ...statements]);
    return results.slice(opening.length);
  }

  async commit(statements: string[], undoWork = false): Promise<void> {
    // The status can lag a statement that just failed (pg rejects it before PostgreSQL's
    // ReadyForQuery arrives), so COMMIT's command tag below is the check that always holds.
    const refused = undoWork ? undefined : this.nested.refusedCommit;
    if (refused) {
      throw refused;
    }
    const status = this.client.getTransactionStatus();
    if (status === 'E' && !undoWork) {
      throw new IdempotencyTransactionAbortedError(this.claimant.consumer, this.claimant.key);
    }
    if (status !== 'T' && status !== 'E') {
      throw this.claimError(dataLayerMessages.claimTransactionEnded(this.claimant.consumer));
    }
    const results = await this.send([...(undoWork ? [UNDO_WORK] : this.deferred), ...statements, 'COMMIT']);
    this.mark(false);
    if (!this.committed(results)) {
      throw new IdempotencyTransactionAbortedError(this.claimant.consumer, this.claimant.key);
    }
  }

  defer(statement: string): void {
    this.deferred.push(statement);
  }

  async listen(channel: string, notified: () => void, lost: (error: Error) => void): Promise<() => Promise<void>> {
    const events = this.client as unknown as NodeJS.EventEmitter;
    let told = false;
    const failed = (error?: Error) => {
      if (!told) {
        told = true;
        lost(error ?? new Error('the connection ended'));
      }
    };
    events.on('notification', notified);
    events.on('error', failed);
    events.on('end', failed);
    const unlisten = async () => {
      events.off('notification', notified).off('error', failed).off('end', failed);
      await this.client.query('UNLISTEN *');
    };
    try {
      await this.client.query(`LISTEN "${channel}"`);
    } catch (error) {
      await unlisten().catch(() => undefined);
      throw error;
    }
    return unlisten;
  }

  async rollback(statements: string[] = []): Promise<StatementResult[]> {
    const results = await this.send([...statements, 'ROLLBACK']);
    this.mark(false);
    return results.slice(0, -1);
  }

  async close(): Promise<void> {
    if (this.open) {
      await this.rollback().catch(() => undefined);
    }
    this.mark(false);
    await this.release();
  }

  /**
   * Sends a statement of the handler's once the ones it sent before are answered: statements that
   * a pool would spread over several connections (`Promise.all` of writes) meet on the claim's one,
   * where node-postgres 8 warns of a query sent while another runs (and 9 refuses it).
   */
  protected inTurn<T>(send: () => Promise<T>): Promise<T> {
    const sent = this.statementsInFlight === 0 ? send() : this.lastStatement!.then(send);
    this.statementsInFlight += 1;
    const answered = () => {
      this.statementsInFlight -= 1;
    };
    this.lastStatement = sent.then(answered, answered);
    return sent;
  }

  /** Refuses a handler's COMMIT or ROLLBACK of the claim's own transaction (`atClaimLevel`), naming `call`. */
  protected refuseAtClaimLevel(atClaimLevel: boolean, call: string): void {
    if (atClaimLevel) {
      throw this.claimError(dataLayerMessages.claimTransactionControlled(this.claimant.consumer, call));
    }
  }

  /** Refuses a nested transaction at a level stronger than the claim's, which PostgreSQL cannot raise. */
  protected refuseStrongerIsolation(requested: IsolationLevel | undefined): void {
    if (this.open && requested && ISOLATION_STRENGTH[requested] > ISOLATION_STRENGTH[this.isolationLevel]) {
      throw this.claimError(dataLayerMessages.strongerIsolationRequested(this.claimant.consumer, requested, this.isolationLevel));
    }
  }

  /**
   * What to send for `statement`, which the handler sends through `lease` (a client of the layer
   * on the claim's connection) while the claim is open: a BEGIN (or START TRANSACTION) opens a
   * savepoint, once no other lease's transaction is open (then a promise of it); a COMMIT releases
   * it, a ROLLBACK rolls back to it; undefined for any other statement, sent as it is.
   * @throws IdempotencyClaimTransactionError for a COMMIT or ROLLBACK of the claim's own
   * transaction, and for a nested transaction at a stronger isolation level than the claim's.
   */
  protected inClaim(statement: string, lease: object): string | Promise<string> | undefined {
    if (!this.open) {
      return undefined;
    }
    const control = TRANSACTION_CONTROL.exec(statement);
    if (!control) {
      this.nested.sent(lease);
      return undefined;
    }
    const keyword = control[1].toLowerCase();
    if (keyword === 'begin' || keyword.startsWith('start')) {
      this.refuseStrongerIsolation(isolationOf(control[2]));
      const savepoint = () => `SAVEPOINT idempotency_nested_${this.nested.depth}`;
      return this.nested.open(lease)?.then(savepoint) ?? savepoint();
    }
    const commits = keyword === 'commit' || keyword === 'end';
    this.refuseAtClaimLevel(!this.nested.owns(lease), commits ? 'COMMIT' : 'ROLLBACK');
    const savepoint = `idempotency_nested_${this.nested.depth}`;
    this.nested.close(lease, commits);
    return commits ? `RELEASE SAVEPOINT ${savepoint}` : `ROLLBACK TO SAVEPOINT ${savepoint}`;
  }

  private claimError(message: string): IdempotencyClaimTransactionError {
    return new IdempotencyClaimTransactionError(message, this.claimant.consumer, this.claimant.key);
  }

  /** Sends `statements` as one multi-statement query; their results, in order. */
  protected async send(statements: string[]): Promise<StatementResult[]> {
    const result = await this.client.query(statements.join(';\n'));
    return Array.isArray(result) ? result : [result];
  }

  /** The error of a nested transaction still waiting when the claim's transaction ended. */
  private readonly transactionEnded = (): IdempotencyClaimTransactionError => this.claimError(dataLayerMessages.claimTransactionEnded(this.claimant.consumer));

  private mark(active: boolean): void {
    this.open = active;
    this.nested.ended(this.transactionEnded);
    this.deferred = [];
    this.marked(active);
  }
}

function isolationOf(clause: string): IsolationLevel | undefined {
  const level = ISOLATION.exec(clause)?.[1];
  return level === undefined ? undefined : (level.toUpperCase().replace(/\s+/g, ' ') as IsolationLevel);
}
