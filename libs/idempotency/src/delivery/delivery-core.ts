import { type ExecutionContext, Injectable } from '@nestjs/common';
import type { ClaimOutcome, CommitOptions, OpenDelivery, RecordedResponse } from '../claiming/claim.js';
import { ClaimingService } from '../claiming/claiming.service.js';
import { translateDatabaseError } from '../claiming/claim-errors.js';
import type { ResolvedHandler } from './resolved-handler.js';
import type { IdempotencyMode } from '../options/handler-values.js';
import { failureOutcome, unwrapDeliveryError } from '../errors/delivery-error-classes.js';
import { LeaseClaimingService, type LeaseClaimRequest } from '../leasing/lease-claiming.service.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import { OTHER_SENDERS } from '../metrics/metrics.constants.js';
import { ResponseRecording } from '../recording/response-recording.js';
import type { TraceSpan } from '../tracing/idempotency-tracing.js';
import { DeliveryObserver, type ObservedDelivery, type SpanSource } from './delivery-observer.js';
import { type EntryReading, type HandlerPlan, requestBuilder, senderReader } from './handler-plan.js';

/**
 * One entry's part of its deliveries (HTTP, the message transports): the core claims, and the
 * entry answers a duplicate, runs the handler under a won claim and answers it, and answers a
 * failure. A new entry is one more of these, with its `EntryReading` for each handler.
 * @internal
 */
export interface DeliveryEntry<S, P extends HandlerPlan<S> = HandlerPlan<S>> extends SpanSource<S> {
  /** Answers a duplicate from `source` with the response its twin recorded (opened). */
  replay(delivery: Delivery<S, P>, source: S, recorded: RecordedResponse): unknown;
  /** Runs the handler under the won claim, then commits or rolls back through `delivery`; returns the handler's result. */
  process(delivery: Delivery<S, P>, source: S): Promise<unknown>;
  /** Answers a delivery that failed (`delivery.request` undefined: refused before its claim): throws, or returns what stands for the result. */
  fail(error: unknown, delivery: Delivery<S, P>, source: S): unknown;
}

/**
 * One delivery, from the moment its handler is known to its end: its claim request, the claim it
 * won, and what the observer keeps of it. Under its won claim, it runs the handler (as part of the
 * span, when there is one) and settles once, recording what the plan stores of the response.
 * @internal
 */
export class Delivery<S, P extends HandlerPlan<S> = HandlerPlan<S>> implements ObservedDelivery {
  readonly consumer: string;
  readonly mode: IdempotencyMode;
  readonly startedAt = performance.now();
  claimedAt = 0;
  request: LeaseClaimRequest | undefined = undefined;
  span: TraceSpan | undefined = undefined;
  transport = '';
  ended = false;
  /** The claim it won; set before the entry's `process()`. */
  claim!: OpenDelivery;

  constructor(
    readonly plan: P,
    private readonly observer: DeliveryObserver,
  ) {
    this.consumer = plan.handler.consumer;
    this.mode = plan.handler.mode;
  }

  get handler(): ResolvedHandler {
    return this.plan.handler;
  }

  /** See `OpenDelivery.rollbackUndoesWork`. */
  get rollbackUndoesWork(): boolean {
    return this.claim.rollbackUndoesWork;
  }

  /** Runs `handle` under the claim. */
  run<T>(handle: () => Promise<T>): Promise<T> {
    const { span } = this;
    return this.claim.run(span ? () => this.observer.running(span, handle) : handle);
  }

  /**
   * Records what the plan stores of `response` and completes the message, unless the delivery
   * settled already; a response that cannot be stored (sealing failed) rolls the claim back.
   * @throws what ended the commit: nothing was recorded.
   */
  async commit(response: RecordedResponse, options?: CommitOptions): Promise<void> {
    let stored = response;
    const { toStore } = this.plan;
    if (toStore) {
      try {
        stored = toStore(this.request!, response);
      } catch (error) {
        await this.rollback('failed', error);
        throw error;
      }
    }
    let settled: boolean;
    try {
      settled = await this.claim.commit(stored, options);
    } catch (error) {
      this.observer.settled(this, failureOutcome(error), error);
      throw error;
    }
    if (settled) {
      this.observer.committed(this, response.status);
    }
  }

  /** Undoes the claim, unless the delivery settled already; `outcome` is how it ended, `cause` the error that ended it. */
  async rollback(outcome: Exclude<DeliveryOutcome, 'processed' | 'duplicate'>, cause?: unknown): Promise<void> {
    if (await this.claim.rollback(outcome)) {
      this.observer.settled(this, outcome, cause);
    }
  }
}

/**
 * Runs `handle` under the delivery's won claim and commits its result, as JSON, with the claim
 * (a message handler's reply, `run()`'s result), with the headers `headersOf` gives it (none by
 * default). A failure, or a result JSON cannot hold (a BigInt, a cycle), rolls the claim back and
 * is thrown, a database error translated.
 * @internal
 */
export async function processJson<S>(
  delivery: Delivery<S>,
  handle: () => Promise<unknown>,
  headersOf?: (result: unknown) => RecordedResponse['headers'],
): Promise<unknown> {
  let result: unknown;
  let json: string | undefined;
  try {
    result = await delivery.run(handle);
    json = JSON.stringify(result);
  } catch (error) {
    const failure = translateDatabaseError(error, delivery.request!);
    await delivery.rollback(failureOutcome(failure), failure);
    throw failure;
  }
  await delivery.commit({ status: null, headers: headersOf?.(result) ?? null, body: json === undefined ? null : Buffer.from(json) });
  return result;
}

/**
 * The claim core every entry shares, which knows none of them: compiles each handler's plan at
 * start-up; then, for each delivery, reads its claim request, claims by the handler's mode, and
 * hands the entry a duplicate's opened record or the won claim; the observer is told each step.
 * @internal
 */
@Injectable()
export class DeliveryCore {
  constructor(
    private readonly claims: ClaimingService,
    private readonly leases: LeaseClaimingService,
    private readonly recording: ResponseRecording,
    private readonly observer: DeliveryObserver,
  ) {}

  /** The plan of `handler`'s deliveries as its entry reads them. */
  plan<S>(handler: ResolvedHandler, reading: EntryReading<S>): HandlerPlan<S> {
    const names: Pick<HandlerPlan<S>, 'formerConsumer'> = { formerConsumer: undefined };
    return Object.assign(names, {
      handler,
      sender: senderReader(handler),
      request: requestBuilder(handler, reading, names),
      claim: handler.mode === 'lease' ? (request: LeaseClaimRequest) => this.leases.claim(request) : (request: LeaseClaimRequest) => this.claims.claim(request),
      toStore: this.recording.storing(handler.record),
    });
  }

  /**
   * Delivers what `entry` read from `source` to the handler of `plan`.
   * @returns what the entry answers: the handler's result, a duplicate's recorded answer, or a failure's.
   */
  async deliver<S, P extends HandlerPlan<S>>(plan: P, context: ExecutionContext, source: S, entry: DeliveryEntry<S, P>): Promise<unknown> {
    const { observer } = this;
    const delivery = new Delivery<S, P>(plan, observer);
    observer.started(delivery, entry, source);
    try {
      let sender = OTHER_SENDERS;
      let request: LeaseClaimRequest;
      try {
        sender = plan.sender(context);
        request = plan.request(context, source, sender);
      } catch (error) {
        observer.refused(delivery, sender, error);
        throw error;
      }
      delivery.request = request;
      let outcome: ClaimOutcome;
      try {
        outcome = await (delivery.span ? observer.claiming(delivery, () => plan.claim(request)) : plan.claim(request));
      } catch (error) {
        observer.claimFailed(delivery, error);
        throw error;
      }
      if (outcome.kind === 'duplicate') {
        observer.duplicate(delivery);
        let recorded: RecordedResponse;
        try {
          recorded = this.recording.open(request, outcome.response);
        } catch (error) {
          observer.end(delivery, failureOutcome(error), error);
          throw error;
        }
        observer.replayed(delivery, recorded.status);
        return await entry.replay(delivery, source, recorded);
      }
      delivery.claim = outcome.claim;
      observer.won(delivery);
      return await entry.process(delivery, source);
    } catch (error) {
      return entry.fail(unwrapDeliveryError(error), delivery, source);
    }
  }
}
