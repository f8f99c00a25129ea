import type { AsyncLocalStorage } from 'node:async_hooks';
import type { ActiveClaim } from '../context/idempotency.context.js';
import { failureOutcome } from '../errors/delivery-error-classes.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import type { CommitOptions, OpenDelivery, RecordedResponse } from './claim.js';

/**
 * What both modes' open deliveries share: the handler runs with the claim reachable through
 * `IdempotencyContext`, and the delivery settles once, by `commit()` or `rollback()` (later calls
 * do nothing and answer false), each ending told to `onSettled`, which gets the recorded response
 * once the store completed the message (`processed`). A mode says how it completes the message,
 * how it undoes the claim and, if anything, what it gives back once the commit ended.
 */
export abstract class SettlingDelivery implements OpenDelivery {
  abstract readonly rollbackUndoesWork: boolean;
  /** True from the first `commit()` or `rollback()` on. */
  protected settled = false;
  /** What `IdempotencyContext` answers while the handler runs. */
  protected abstract readonly active: ActiveClaim;

  constructor(
    private readonly storage: AsyncLocalStorage<ActiveClaim>,
    private readonly onSettled: (outcome: DeliveryOutcome, recorded?: RecordedResponse) => void,
  ) {}

  run<T>(handle: () => Promise<T>): Promise<T> {
    return this.storage.run(this.active, handle);
  }

  async commit(response: RecordedResponse, options: CommitOptions = {}): Promise<boolean> {
    if (this.settled) {
      return false;
    }
    this.settle();
    try {
      await this.complete(response, options);
      this.onSettled('processed', response);
      return true;
    } catch (error) {
      const failure = this.failure(error);
      this.onSettled(failureOutcome(failure));
      throw failure;
    } finally {
      if (this.afterCommit) {
        await this.afterCommit();
      }
    }
  }

  async rollback(outcome: Exclude<DeliveryOutcome, 'processed' | 'duplicate'>): Promise<boolean> {
    if (this.settled) {
      return false;
    }
    this.settle();
    await this.undo();
    this.onSettled(outcome);
    return true;
  }

  /** Marks the delivery settled, before it commits or rolls back. */
  protected settle(): void {
    this.settled = true;
  }

  /** Records `response` and completes the message (`undoWork`: without the handler's writes); throws when it cannot. */
  protected abstract complete(response: RecordedResponse, options: CommitOptions): Promise<void>;

  /** The error to answer for `error`, which ended the commit: by default, itself. */
  protected failure(error: unknown): unknown {
    return error;
  }

  /** Undoes the claim, so that the next delivery processes the message. */
  protected abstract undo(): Promise<unknown>;

  /** Gives back what the delivery held until its commit ended, well or not (the claim's connection); a lease holds nothing. */
  protected afterCommit?(): Promise<void>;
}
