import type { AsyncLocalStorage } from 'node:async_hooks';
import type { ActiveClaim } from '../context/idempotency.context.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import { commitRefusedError, functionDroppedError, translateDatabaseError } from './claim-errors.js';
import type { ClaimRequest, CommitOptions, RecordedResponse } from './claim.js';
import type { ClaimDialect, ClaimSql } from '../dialects/store-dialect.js';
import type { ClaimConnection } from '../data-layers/data-layer.js';
import { SettlingDelivery } from './settling-delivery.js';
import { downstreamKey } from '../keys/downstream-key.js';

/**
 * A claim this delivery won and has not settled yet: run the handler in its transaction, then
 * commit it with the response to record, or roll it back. Settles once; later calls do nothing.
 */
export class OpenClaim extends SettlingDelivery {
  /** The handler's writes are in the claim's transaction: a rollback undoes them with it. */
  readonly rollbackUndoesWork = true;
  protected readonly active: ClaimInHandler;

  constructor(
    private readonly transaction: ClaimConnection,
    private readonly request: ClaimRequest,
    private readonly sql: ClaimSql,
    private readonly dialect: ClaimDialect,
    storage: AsyncLocalStorage<ActiveClaim>,
    onSettled: (outcome: DeliveryOutcome, recorded?: RecordedResponse) => void,
  ) {
    super(storage, onSettled);
    // Inside a handler's claim, the work's writes join the handler's transaction, which the layer knows.
    this.active = new ClaimInHandler(request, request.handlerClaim ?? transaction);
  }

  /**
   * Records `response` and commits the claim with the handler's work (`undoWork`: without it).
   * @throws IdempotencyTransactionAbortedError, IdempotencyClaimTransactionError or the database's
   * error: nothing was committed.
   */
  protected async complete(response: RecordedResponse, options: CommitOptions): Promise<void> {
    await this.transaction.commit(this.dialect.recordStatements(this.sql, this.request, response), options.undoWork);
    this.active.committed();
  }

  /**
   * A serialization failure or deadlock is an IdempotencyTransientError, a statement of an aborted
   * transaction an IdempotencyTransactionAbortedError, the record function gone an IdempotencySchemaError,
   * a constraint that refused the COMMIT (an outbox id taken) an IdempotencyCommitRefusedError.
   */
  protected override failure(error: unknown): unknown {
    return functionDroppedError(error, this.sql.table, 'record') ?? commitRefusedError(error, this.request) ?? translateDatabaseError(error, this.request);
  }

  /** Rolls back the claim with the handler's work. */
  protected undo(): Promise<void> {
    return this.transaction.close();
  }

  /** Gives the connection back, rolling back what a failed commit left open. */
  protected override afterCommit(): Promise<void> {
    return this.transaction.close();
  }
}

/** What `IdempotencyContext` answers in the transactional mode; the downstream key, which few handlers read, is derived when read. */
class ClaimInHandler implements ActiveClaim {
  readonly consumer: string;
  readonly key: string;
  readonly sender: string;
  /** What runs once the claim committed; most claims have nothing. */
  private onCommit: (() => void)[] | undefined;

  constructor(
    private readonly request: ClaimRequest,
    readonly transaction: ClaimConnection,
  ) {
    this.consumer = request.consumer;
    this.key = request.clientKey ?? request.key;
    this.sender = request.sender;
  }

  get downstreamKey(): string {
    return downstreamKey(this.request);
  }

  afterCommit(done: () => void): void {
    (this.onCommit ??= []).push(done);
  }

  /** The claim committed: what waited for it runs. */
  committed(): void {
    this.onCommit?.forEach((done) => done());
  }
}
