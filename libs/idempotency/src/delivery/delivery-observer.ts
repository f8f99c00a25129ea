import { Injectable } from '@nestjs/common';
import type { ClaimRequest } from '../claiming/claim.js';
import type { IdempotencyMode } from '../options/handler-values.js';
import { classify, failureOutcome } from '../errors/delivery-error-classes.js';
import { IdempotencyLeaseLostError } from '../errors/idempotency.errors.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import { IdempotencyTracing, type TraceSpan } from '../tracing/idempotency-tracing.js';

/**
 * What the observer keeps of one delivery, from the moment its handler is known to its end.
 * @internal
 */
export interface ObservedDelivery {
  readonly consumer: string;
  readonly mode: IdempotencyMode;
  /** When it started, by `performance.now()`. */
  readonly startedAt: number;
  /** When its claim was won; 0 while it is not. */
  claimedAt: number;
  /** Its claim request, once read. */
  request: ClaimRequest | undefined;
  /** Its span; undefined when nothing would see one. */
  span: TraceSpan | undefined;
  /** `http`, or the messaging system; set with the span, which alone tells them apart. */
  transport: string;
  ended: boolean;
}

/**
 * What a span says of where a delivery came from, read only when it has a span.
 * @internal
 */
export interface SpanSource<S> {
  /** `http`, or the messaging system (`rabbitmq`, `nats`, ...). */
  transport(source: S): string;
  /** HTTP: the request's method. */
  method?(source: S): string;
}

/**
 * The one writer of what is observed of each delivery: its count by outcome and sender, the
 * in-flight gauge and the refusals (409, 503), the claim's wait and its time to the commit, its
 * OpenTelemetry span and its `IDEMPOTENCY_CHANNELS` messages (built only for subscribers). The
 * delivery core tells it each step; nothing else writes them.
 * @internal
 */
@Injectable()
export class DeliveryObserver {
  constructor(
    private readonly metrics: IdempotencyMetricsService,
    private readonly tracing: IdempotencyTracing,
  ) {}

  /** A delivery of a known handler from `source` starts: counted in flight, and traced when anything would see its span. */
  started<S>(delivery: ObservedDelivery, entry: SpanSource<S>, source: S): void {
    this.metrics.recordInFlight(delivery.consumer, 1);
    if (this.tracing.tracesSpans) {
      delivery.transport = entry.transport(source);
      delivery.span = this.tracing.startSpan({ consumer: delivery.consumer, mode: delivery.mode, transport: delivery.transport, method: entry.method?.(source) });
    }
  }

  /** Refused before its claim (no usable key, sender or scope): counted rejected under `sender`. */
  refused(delivery: ObservedDelivery, sender: string, error: unknown): void {
    this.metrics.recordDelivery({ consumer: delivery.consumer, sender }, 'rejected');
    this.publishRejected(delivery, sender, error);
    this.end(delivery, failureOutcome(error), error);
  }

  /** Its claim is asked for, with its span (which it has) active around it. */
  claiming<T>(delivery: ObservedDelivery, claim: () => Promise<T>): Promise<T> {
    const span = delivery.span!;
    const request = delivery.request;
    span.setAttribute('idempotency.sender', request!.sender);
    if (this.tracing.recordKey) {
      span.setAttribute('idempotency.key', request!.key);
      if (delivery.transport !== 'http') {
        span.setAttribute('messaging.message.id', request!.key);
      }
    }
    return this.tracing.activate(span, claim);
  }

  /** Its claim failed (in flight, unavailable, a reused key, ...). */
  claimFailed(delivery: ObservedDelivery, error: unknown): void {
    const outcome = failureOutcome(error);
    this.metrics.recordDelivery(delivery.request!, outcome);
    this.publishRejected(delivery, delivery.request!.sender, error);
    this.end(delivery, outcome, error);
  }

  /** A twin had processed the message: counted a duplicate, before its record is opened. */
  duplicate(delivery: ObservedDelivery): void {
    this.metrics.recordDelivery(delivery.request!, 'duplicate');
  }

  /** The duplicate's record opened, it is replayed: its wait is timed, and it ends. */
  replayed(delivery: ObservedDelivery, status: number | null): void {
    const waitMs = this.claimWait(delivery, performance.now());
    delivery.span?.addEvent('idempotency.replay', { 'idempotency.replayed': true });
    const { duplicate } = this.tracing.channels;
    if (duplicate.hasSubscribers) {
      duplicate.publish(this.message(delivery, { waitMs }));
    }
    this.end(delivery, 'duplicate', undefined, status);
  }

  /** It won its claim: its wait is timed, and the handler runs next. */
  won(delivery: ObservedDelivery): void {
    const now = performance.now();
    const waitMs = this.claimWait(delivery, now);
    delivery.claimedAt = now;
    delivery.span?.addEvent('idempotency.claim');
    const { claim } = this.tracing.channels;
    if (claim.hasSubscribers) {
      claim.publish(this.message(delivery, { mode: delivery.mode, waitMs }));
    }
  }

  /** Runs the handler as the span's part (the delivery has a span). */
  running<T>(span: TraceSpan, handle: () => Promise<T>): Promise<T> {
    span.addEvent('idempotency.handler');
    return this.tracing.activate(span, handle).then((result) => {
      span.addEvent('idempotency.handler.end');
      return result;
    });
  }

  /** Its commit completed the message, recording `status`. */
  committed(delivery: ObservedDelivery, status: number | null): void {
    this.metrics.recordDelivery(delivery.request!, 'processed');
    const claimToCommitMs = performance.now() - delivery.claimedAt;
    this.metrics.recordClaimToCommit(delivery.consumer, claimToCommitMs);
    delivery.span?.addEvent('idempotency.commit', { 'idempotency.claim_to_commit_ms': claimToCommitMs });
    const { commit } = this.tracing.channels;
    if (commit.hasSubscribers) {
      commit.publish(this.message(delivery, { claimToCommitMs }));
    }
    this.end(delivery, 'processed', undefined, status);
  }

  /** Its won claim settled without a record: rolled back as `outcome`, or its commit failed. */
  settled(delivery: ObservedDelivery, outcome: Exclude<DeliveryOutcome, 'processed' | 'duplicate'>, error?: unknown): void {
    this.metrics.recordDelivery(delivery.request!, outcome);
    const { leaseLost } = this.tracing.channels;
    if (error instanceof IdempotencyLeaseLostError && leaseLost.hasSubscribers) {
      leaseLost.publish(this.message(delivery, { ...error.held }));
    }
    this.end(delivery, outcome, error);
  }

  /** Publishes `error` on the `rejected` channel when it is the sender's mistake that no retry cures (an invalid key, a reused one). */
  private publishRejected(delivery: ObservedDelivery, sender: string, error: unknown): void {
    const { rejected } = this.tracing.channels;
    if (!rejected.hasSubscribers) {
      return;
    }
    const problem = classify(error);
    if (problem?.outcome === 'rejected' && !problem.retryable) {
      const key = this.tracing.recordKey ? delivery.request?.key : undefined;
      rejected.publish({ consumer: delivery.consumer, sender, code: problem.code, ...(key === undefined ? {} : { key }) });
    }
  }

  /** Ends the delivery once: out of the in-flight gauge, a refusal counted, its span ended. */
  end(delivery: ObservedDelivery, outcome: DeliveryOutcome, error?: unknown, status?: number | null): void {
    if (delivery.ended) {
      return;
    }
    delivery.ended = true;
    const { consumer, span } = delivery;
    this.metrics.recordInFlight(consumer, -1);
    const answered = error === undefined ? undefined : classify(error)?.status;
    if (answered === 409 || answered === 503) {
      this.metrics.recordRefusal(consumer, answered);
    }
    if (!span) {
      return;
    }
    span.setAttribute('idempotency.outcome', outcome);
    span.setAttribute('idempotency.replayed', outcome === 'duplicate');
    const code = status ?? answered;
    if (code != null && delivery.transport === 'http') {
      span.setAttribute('http.response.status_code', code);
    }
    const failed = outcome === 'failed' || outcome === 'unavailable';
    if (error !== undefined) {
      span.setAttribute('error.type', error instanceof Error ? error.name : 'Error');
      if (failed) {
        span.recordException(error instanceof Error ? error : String(error));
      }
    }
    if (failed) {
      this.tracing.setError(span, error instanceof Error ? error.message : outcome);
    }
    if (outcome !== 'processed' && outcome !== 'duplicate' && delivery.claimedAt > 0) {
      span.addEvent('idempotency.rollback');
    }
    span.end();
  }

  /** How long the delivery waited for its claim, until `now`. */
  private claimWait(delivery: ObservedDelivery, now: number): number {
    const waitMs = now - delivery.startedAt;
    this.metrics.recordClaimWait(delivery.consumer, waitMs);
    delivery.span?.setAttribute('idempotency.claim.wait_ms', waitMs);
    return waitMs;
  }

  private message<T extends object>(delivery: ObservedDelivery, fields: T): T & { consumer: string; sender: string; key?: string } {
    const request = delivery.request!;
    const message = { consumer: request.consumer, sender: request.sender, ...fields };
    return this.tracing.recordKey ? { ...message, key: request.key } : message;
  }
}
