import type { AsyncLocalStorage } from 'node:async_hooks';
import type { ActiveClaim } from '../context/idempotency.context.js';
import { failureOutcome } from '../errors/delivery-error-classes.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import { translateDatabaseError } from './claim-errors.js';
import type { ClaimRequest, OpenDelivery, RecordedResponse } from './claim.js';
import { type ClaimSql, recordStatements } from './claim.queries.js';
import type { ClaimTransaction } from './claim-transaction.js';
import { downstreamKey } from '../keys/downstream-key.js';

/**
 * A claim this delivery won and has not settled yet: run the handler in its transaction, then
 * commit it with the response to record, or roll it back. Settles once; later calls do nothing.
 */
export class OpenClaim implements OpenDelivery {
  /** The handler's writes are in the claim's transaction: a rollback undoes them with it. */
  readonly rollbackUndoesWork = true;
  private settled = false;
  private readonly active: ActiveClaim;

  constructor(
    private readonly transaction: ClaimTransaction,
    private readonly request: ClaimRequest,
    private readonly sql: ClaimSql,
    private readonly storage: AsyncLocalStorage<ActiveClaim>,
    private readonly onSettled: (outcome: DeliveryOutcome) => void,
  ) {
    this.active = {
      consumer: request.consumer,
      key: request.clientKey ?? request.key,
      sender: request.sender,
      get downstreamKey() {
        return downstreamKey(request);
      },
      transaction,
    };
  }

  /** Runs `handle` with the claim's transaction reachable through `IdempotencyContext`. */
  run<T>(handle: () => Promise<T>): Promise<T> {
    return this.storage.run(this.active, handle);
  }

  /**
   * Records `response` and commits the claim with the handler's work.
   * @throws IdempotencyTransactionAbortedError, IdempotencyTransientError,
   * IdempotencyClaimTransactionError or the database's error: nothing was committed.
   */
  async commit(response: RecordedResponse): Promise<void> {
    if (this.settled) {
      return;
    }
    this.settled = true;
    try {
      await this.transaction.commit(recordStatements(this.sql, this.request, response));
      this.onSettled('processed');
    } catch (error) {
      const failure = translateDatabaseError(error, this.request);
      this.onSettled(failureOutcome(failure));
      throw failure;
    } finally {
      await this.transaction.close();
    }
  }

  /** Rolls back the claim with the handler's work; `outcome` is how the delivery ended, for the metrics. */
  async rollback(outcome: Exclude<DeliveryOutcome, 'processed' | 'duplicate'>): Promise<void> {
    if (this.settled) {
      return;
    }
    this.settled = true;
    await this.transaction.close();
    this.onSettled(outcome);
  }
}
