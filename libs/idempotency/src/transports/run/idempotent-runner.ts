import type { ExecutionContext } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { RecordedResponse } from '../../claiming/claim.js';
import type { ActiveClaim } from '../../context/idempotency.context.js';
import { CallerClaimConnection } from '../../data-layers/caller-claim-connection.js';
import { DataLayerJoin } from '../../data-layers/data-layer-join.js';
import { CLAIM_STORAGE, type ClaimConnection, type TransactionStatements } from '../../data-layers/data-layer.js';
import { IdempotencyOptionsError } from '../../errors/idempotency.errors.js';
import { runnerMessages } from './runner.messages.js';
import { type Delivery, DeliveryCore, type DeliveryEntry, processJson } from '../../delivery/delivery-core.js';
import type { HandlerPlan } from '../../delivery/handler-plan.js';
import { IdempotencyMetadataAccessor } from '../../decorators/idempotency-metadata.accessor.js';
import type { IdempotentHandlerOptions } from '../../options/idempotent-handler.options.js';
import { toMessageKey } from '../../keys/message-key.js';

/** What `IdempotentRunner.run()` claims, and how. */
export interface IdempotentRunOptions extends Pick<IdempotentHandlerOptions, 'retention' | 'inFlight' | 'isolationLevel' | 'mode' | 'lease' | 'store'> {
  /**
   * The stable name the key is claimed under, as a handler's `consumer`: the same in every
   * process and release (a job's name, a command's type), never a generated one.
   */
  consumer: string;
  /** The work's idempotency key: the same for every attempt of the same work (a job's id, a command's id). */
  key: string;
  /** Who asked for the work, for the metrics and logs. @default 'default' */
  sender?: string;
  /**
   * A transaction you opened, for the claim to join instead of opening its own: how to run one
   * SQL statement in it (see `TransactionStatements`). The claim, `work`'s writes through that
   * transaction and the recorded result then commit when you commit it, and roll back with it;
   * nothing of the claim is durable before. Not in lease mode. Unset inside an idempotent
   * handler in the transactional mode: the claim joins the handler's transaction the same way.
   */
  transaction?: TransactionStatements;
}

/** One call of `run()`, as the core hands it back. */
interface RunSource {
  readonly key: string;
  readonly work: () => Promise<unknown>;
  readonly transaction: TransactionStatements | undefined;
  /** The claim of the idempotent handler that called `run()`, which the call's claim joins. */
  readonly handlerClaim: ClaimConnection | undefined;
}

/** `run()` reads nothing of a Nest execution context: the key and the sender come with the call. */
const NO_CONTEXT = undefined as unknown as ExecutionContext;

/** How `run()` answers: a duplicate with the recorded result, a won claim by running the work, a failure by throwing it. */
const RUN_ENTRY: DeliveryEntry<RunSource> = {
  transport: () => 'run',

  replay: (_delivery, _source, { body }: RecordedResponse) => (body === null || body.length === 0 ? undefined : JSON.parse(body.toString('utf8'))),

  process: (delivery: Delivery<RunSource>, { work }: RunSource) => processJson(delivery, work),

  fail(error: unknown): never {
    throw error;
  },
};

/**
 * Exactly-once work outside a handler: a cron job, a CQRS command handler, a consumer of a library
 * the module has no adapter for. Inject it and call `run()`.
 *
 * @example
 * ```ts
 * constructor(private readonly runner: IdempotentRunner, private readonly idempotency: IdempotencyContext) {}
 *
 * @Cron('0 2 * * *')
 * async settleDay() {
 *   const day = new Date().toISOString().slice(0, 10);
 *   await this.runner.run({ consumer: 'settle-day', key: day }, async () => {
 *     await this.idempotency.manager.insert(Settlement, { day }); // TypeORM; other layers: your own instance
 *     return { day };
 *   });
 * }
 * ```
 */
@Injectable()
export class IdempotentRunner {
  /** The plans of the consumers run so far, by consumer and options. */
  private readonly plans = new Map<string, HandlerPlan<RunSource>>();

  /** @internal Nest constructs it. */
  constructor(
    private readonly core: DeliveryCore,
    private readonly accessor: IdempotencyMetadataAccessor,
    @Inject(CLAIM_STORAGE) private readonly storage: AsyncLocalStorage<ActiveClaim>,
    private readonly join: DataLayerJoin,
  ) {}

  /**
   * Claims `options.key` for `options.consumer` in a transaction of the module's data layer, runs
   * `work` in it (its writes through the layer join the claim, as a handler's do; `IdempotencyContext`
   * answers inside it), records its result as JSON and commits both. Inside an idempotent handler
   * in the transactional mode (and without `transaction`), the claim is a savepoint in the
   * handler's transaction instead, on its connection: the claim, the work and its result commit
   * with the handler, or roll back with it. A later call with the same key
   * does not run `work`: it answers the recorded result, parsed from its JSON (a `Date` comes back
   * as its ISO text). A call while another is in flight waits for it (`inFlight: 'reject'`: throws
   * `IdempotencyInFlightError`). When `work` throws, nothing commits and the error is thrown.
   * @throws IdempotencyKeyError when the key is not a printable text of 1 to 255 characters.
   * @throws IdempotencyOptionsError when an option cannot work.
   * @throws the module's errors as a handler meets them (`IdempotencyUnavailableError`, ...), and `work`'s own.
   */
  run<T>(options: IdempotentRunOptions, work: () => Promise<T>): Promise<T> {
    if (options.transaction !== undefined && (typeof options.transaction !== 'function' || options.mode === 'lease')) {
      throw new IdempotencyOptionsError(runnerMessages.invalidTransaction(options.consumer, options.mode));
    }
    const handlerClaim = options.transaction === undefined && options.mode !== 'lease' ? this.openHandlerClaim() : undefined;
    // Inside the handler, a statement through the data layer runs on its claim's connection.
    const transaction = handlerClaim ? (sql: string) => this.join.query(sql) : options.transaction;
    return this.core.deliver(this.planOf(options), NO_CONTEXT, { key: options.key, work, transaction, handlerClaim }, RUN_ENTRY) as Promise<T>;
  }

  /** The open claim transaction of the idempotent handler this call runs in, if any (not a caller's own, which the data layer does not know). */
  private openHandlerClaim(): ClaimConnection | undefined {
    const transaction = this.storage.getStore()?.transaction;
    return transaction?.isOpen && !(transaction instanceof CallerClaimConnection) ? transaction : undefined;
  }

  private planOf(options: IdempotentRunOptions): HandlerPlan<RunSource> {
    const { consumer, retention, inFlight, isolationLevel, mode, lease, store, sender } = options;
    const id = JSON.stringify([consumer, retention, inFlight, isolationLevel, mode, lease, store, sender]);
    let plan = this.plans.get(id);
    if (!plan) {
      const handler = this.accessor.resolveRun({ consumer, retention, inFlight, isolationLevel, mode, lease, store, sender });
      plan = this.core.plan<RunSource>(handler, {
        key: (_context, source) => toMessageKey(source.key, 'run()'),
        defaultInFlight: 'wait',
        callerTransaction: (source) => source.transaction,
        handlerClaim: (source) => source.handlerClaim,
      });
      this.plans.set(id, plan);
    }
    return plan;
  }
}
