import { Inject, Injectable } from '@nestjs/common';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { EntityManager, QueryRunner } from '../optional/typeorm-types.js';
import { CLAIM_STORAGE, type ClaimConnection, type PgPoolClient } from '../data-layers/data-layer.js';
import { type Duration, MAX_TIMER_MS, toMilliseconds } from '../duration/duration.js';
import { IdempotencyContextError } from '../errors/idempotency.errors.js';
import { contextMessages } from './context.messages.js';


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
 * The claim a handler is running under.
 * @internal
 */
export interface ActiveClaim {
  readonly consumer: string;
  readonly key: string;
  readonly sender: string;
  readonly downstreamKey: string;
  /** Transactional mode: the claim's transaction, which the data layer joins while it is open. */
  readonly transaction?: ClaimConnection;
  /** Transactional mode: runs `done` once the claim's transaction committed (the outbox's wake-up of its relay, where the database cannot wake it). */
  afterCommit?(done: () => void): void;
  /** Lease mode: the lease the handler holds. */
  readonly lease?: HeldLease;
}

/**
 * The idempotent handler's claim, reachable from any provider the handler calls.
 *
 * In the transactional mode (the default), writes through `manager` (TypeORM) or `client` (a pg
 * Pool) commit together with the claim, as do those through the claims' data layer (TypeORM:
 * injected repositories, `dataSource.manager`, `dataSource.transaction()`, transaction helpers; a
 * pg Pool: the pool and the Drizzle, Kysely or Prisma instance built on it), which joins the claim
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
   * TypeORM (`TypeOrmDataLayer`): the `EntityManager` of the transaction that holds the claim.
   * @throws IdempotencyContextError outside an idempotent handler, in lease mode, on another data
   * layer, and in `run()` given a `transaction` of yours.
   */
  get manager(): EntityManager {
    const handle = this.claimTransaction('manager') as Partial<QueryRunner>;
    if (handle.manager === undefined) {
      throw new IdempotencyContextError(contextMessages.notThisLayer(this.active().consumer, 'manager', 'TypeOrmDataLayer'));
    }
    return handle.manager;
  }

  /**
   * A `pg` Pool (`PgPoolDataLayer`): the pooled client that holds the claim's transaction. The pool
   * itself, and Drizzle, Kysely or Prisma built on it, hand this client out while the handler runs,
   * so writing through them joins the claim as well; a transaction they open on it is a savepoint.
   * @throws IdempotencyContextError outside an idempotent handler, in lease mode, on another data
   * layer, and in `run()` given a `transaction` of yours.
   */
  get client(): PgPoolClient {
    const handle = this.claimTransaction('client') as Partial<PgPoolClient>;
    if (handle.release === undefined) {
      throw new IdempotencyContextError(contextMessages.notThisLayer(this.active().consumer, 'client', 'PgPoolDataLayer'));
    }
    return handle as PgPoolClient;
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

  private claimTransaction(accessor: string): unknown {
    const { transaction, consumer } = this.active();
    if (!transaction) {
      throw new IdempotencyContextError(contextMessages.noClaimTransactionInLeaseMode(consumer, accessor));
    }
    if (transaction.handle === undefined) {
      throw new IdempotencyContextError(contextMessages.inCallersTransaction(consumer, accessor));
    }
    return transaction.handle;
  }

  private active(): ActiveClaim {
    const claim = this.storage.getStore();
    if (!claim) {
      throw new IdempotencyContextError();
    }
    return claim;
  }
}
