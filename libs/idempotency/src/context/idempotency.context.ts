import { Inject, Injectable } from '@nestjs/common';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { type Duration, MAX_TIMER_MS, toMilliseconds } from '../duration/duration.js';
import { IdempotencyContextError } from '../errors/idempotency.errors.js';
import { contextMessages } from './context.messages.js';

/** The token of the AsyncLocalStorage that holds the active claim. @internal */
export const CLAIM_STORAGE = Symbol('IDEMPOTENCY:CLAIM_STORAGE');

/**
 * What a handler in lease mode can do with its lease.
 * @internal
 */
export interface HeldLease {
  /** Moves the lease's expiry `leaseMs` from now; throws IdempotencyLeaseLostError when it was taken over. */
  extend(leaseMs: number): Promise<void>;
  /** The handler's `lease`, in milliseconds. */
  readonly leaseMs: number;
}

/**
 * What a handler in the transactional mode reaches of its claim's transaction.
 * @internal
 */
export interface HeldTransaction {
  /** True from BEGIN until COMMIT or ROLLBACK. */
  readonly isOpen: boolean;
  /** The data source whose pool gave the claim's connection. */
  readonly dataSource: DataSource;
  /** The claim's query runner, which the data source hands out while the transaction is open. */
  readonly queryRunner: QueryRunner;
}

/**
 * The claim a handler is running under.
 * @internal
 */
export interface ActiveClaim {
  readonly consumer: string;
  readonly key: string;
  readonly sender: string;
  readonly downstreamKey: string;
  /** Transactional mode: the claim's transaction; the data sources hand out its query runner while it is open. */
  readonly transaction?: HeldTransaction;
  /** Lease mode: the lease the handler holds. */
  readonly lease?: HeldLease;
}

/**
 * The idempotent handler's claim, reachable from any provider the handler calls.
 *
 * In the transactional mode (the default), writes through `manager` commit together with the
 * claim, as do those through the claims' data source (injected repositories,
 * `dataSource.manager`, `dataSource.transaction()`, transaction helpers), which joins the claim
 * while the handler runs. In lease mode there is no claim transaction: the handler calls other
 * services with `downstreamKey`, and may `extendLease()`.
 *
 * @example
 * ```ts
 * constructor(private readonly idempotency: IdempotencyContext) {}
 *
 * async grant(account: string, cents: number) {
 *   await this.idempotency.manager.insert(LedgerEntry, { account, cents });
 * }
 *
 * async charge(order: Order) {
 *   await this.payments.charge(order, { idempotencyKey: this.idempotency.downstreamKey });
 * }
 * ```
 */
@Injectable()
export class IdempotencyContext {
  /** @internal Nest constructs it. */
  constructor(@Inject(CLAIM_STORAGE) private readonly storage: AsyncLocalStorage<ActiveClaim>) {}

  /** True inside an `@IdempotentHandler()` (and what it calls), false elsewhere. */
  get isActive(): boolean {
    return this.storage.getStore() !== undefined;
  }

  /**
   * The `EntityManager` of the transaction that holds the claim.
   * @throws IdempotencyContextError outside an idempotent handler, and in lease mode.
   */
  get manager(): EntityManager {
    const { transaction, consumer } = this.active();
    if (!transaction) {
      throw new IdempotencyContextError(contextMessages.noClaimTransactionInLeaseMode(consumer));
    }
    return transaction.queryRunner.manager;
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

  /**
   * An idempotency key for the calls this handler makes to other services (a payment provider's
   * `Idempotency-Key`): the same for every delivery of the message to this consumer, in every
   * process, so a retried call is recognised by the other side. 64 hexadecimal characters (a
   * SHA-256 of the consumer and the key).
   * @throws IdempotencyContextError outside an idempotent handler.
   */
  get downstreamKey(): string {
    return this.active().downstreamKey;
  }

  /**
   * Lease mode: extends the handler's lease to `duration` (its `lease` unless given) from now, for
   * a handler that runs longer than its lease.
   * @throws IdempotencyLeaseLostError when another delivery took the lease over.
   * @throws IdempotencyContextError outside an idempotent handler, and in the transactional mode.
   */
  async extendLease(duration?: Duration): Promise<void> {
    const { lease, consumer } = this.active();
    if (!lease) {
      throw new IdempotencyContextError(contextMessages.noLeaseInTransactionalMode(consumer));
    }
    await lease.extend(duration === undefined ? lease.leaseMs : toMilliseconds('extendLease duration', duration, MAX_TIMER_MS));
  }

  private active(): ActiveClaim {
    const claim = this.storage.getStore();
    if (!claim) {
      throw new IdempotencyContextError();
    }
    return claim;
  }
}
