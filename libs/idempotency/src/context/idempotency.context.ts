import { Inject, Injectable } from '@nestjs/common';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { EntityManager } from 'typeorm';
import type { ClaimTransaction } from '../claiming/claim-transaction.js';
import { IdempotencyContextError } from '../errors/idempotency-context.error.js';
import { CLAIM_STORAGE } from '../idempotency.internal-constants.js';

/** The claim a handler is running under. */
export interface ActiveClaim {
  readonly manager: EntityManager;
  readonly consumer: string;
  readonly key: string;
  readonly sender: string;
  /** The claim's transaction: the data sources hand out its query runner while it is open. */
  readonly transaction: ClaimTransaction;
}

/**
 * The idempotent handler's transaction, reachable from any provider the handler calls. Writes
 * through `manager` commit together with the claim, as do those through the claims' data source
 * (injected repositories, `dataSource.manager`, `dataSource.transaction()`, transaction helpers),
 * which joins the claim while the handler runs.
 *
 * @example
 * ```ts
 * constructor(private readonly idempotency: IdempotencyContext) {}
 *
 * async grant(account: string, cents: number) {
 *   await this.idempotency.manager.insert(LedgerEntry, { account, cents });
 * }
 * ```
 */
@Injectable()
export class IdempotencyContext {
  constructor(@Inject(CLAIM_STORAGE) private readonly storage: AsyncLocalStorage<ActiveClaim>) {}

  /** True inside an `@IdempotentHandler()` (and what it calls), false elsewhere. */
  get isActive(): boolean {
    return this.storage.getStore() !== undefined;
  }

  /**
   * The `EntityManager` of the transaction that holds the claim.
   * @throws IdempotencyContextError outside an idempotent handler.
   */
  get manager(): EntityManager {
    return this.active().manager;
  }

  /** The message's idempotency key. @throws IdempotencyContextError outside an idempotent handler. */
  get key(): string {
    return this.active().key;
  }

  /** The consumer the claim is scoped to. @throws IdempotencyContextError outside an idempotent handler. */
  get consumer(): string {
    return this.active().consumer;
  }

  /** Who sent the message. @throws IdempotencyContextError outside an idempotent handler. */
  get sender(): string {
    return this.active().sender;
  }

  private active(): ActiveClaim {
    const claim = this.storage.getStore();
    if (!claim) {
      throw new IdempotencyContextError();
    }
    return claim;
  }
}
