import type { ClaimRequest, CommitOptions, OpenDelivery, RecordedResponse } from '../claiming/claim.js';
import type { ClaimOutcome } from '../claiming/claiming.service.js';
import { classify, failureOutcome } from '../errors/delivery-error-classes.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import type { DeliverySource, IdempotencyTracing } from './idempotency-tracing.js';

/**
 * The part of an OpenTelemetry span a delivery uses (the module names no type of the optional package in its declarations).
 * @internal
 */
export interface TraceSpan {
  setAttribute(key: string, value: string | number | boolean): unknown;
  addEvent(name: string, attributes?: Record<string, string | number | boolean>): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error | string): unknown;
  end(): void;
}

/**
 * One delivery as traced and timed, from the moment its handler is known to its end: the claim
 * (its wait), the handler, and the commit, rollback or replay that ends it. Ends once; the
 * in-flight gauge counts it until then.
 * @internal
 */
export class DeliveryTrace {
  private readonly startedAt = performance.now();
  private claimedAt = 0;
  private request: ClaimRequest | undefined;
  private ended = false;

  constructor(
    private readonly tracing: IdempotencyTracing,
    private readonly source: DeliverySource,
    private readonly span: TraceSpan | undefined,
  ) {
    tracing.metrics.recordInFlight(source.consumer, 1);
  }

  /**
   * Claims through `claiming` and records how it went: a duplicate ends the trace (its replay), a
   * claim won is returned wrapped, so that its commit or rollback ends it; a failure ends it too.
   */
  async claim(request: ClaimRequest, claiming: () => Promise<ClaimOutcome>): Promise<ClaimOutcome> {
    this.request = request;
    if (this.span) {
      this.span.setAttribute('idempotency.sender', request.sender);
      if (this.tracing.recordKey) {
        this.span.setAttribute('idempotency.key', request.key);
        if (this.source.transport !== 'http') {
          this.span.setAttribute('messaging.message.id', request.key);
        }
      }
    }
    let outcome: ClaimOutcome;
    try {
      outcome = await (this.span ? this.tracing.activate(this.span, claiming) : claiming());
    } catch (error) {
      this.end(failureOutcome(error), error);
      throw error;
    }
    const now = performance.now();
    const waitMs = now - this.startedAt;
    const { metrics, channels } = this.tracing;
    metrics.recordClaimWait(request.consumer, waitMs);
    this.span?.setAttribute('idempotency.claim.wait_ms', waitMs);
    if (outcome.kind === 'duplicate') {
      this.span?.addEvent('idempotency.replay', { 'idempotency.replayed': true });
      if (channels.duplicate.hasSubscribers) {
        channels.duplicate.publish(this.message({ waitMs }));
      }
      this.end('duplicate', undefined, outcome.response.status);
      return outcome;
    }
    this.claimedAt = now;
    this.span?.addEvent('idempotency.claim');
    if (channels.claim.hasSubscribers) {
      channels.claim.publish(this.message({ mode: this.source.mode, waitMs }));
    }
    return { kind: 'claimed', claim: new TracedDelivery(outcome.claim, this) };
  }

  /** Ends the trace of a delivery refused before its claim (no usable key or sender). */
  fail(error: unknown): void {
    this.end(failureOutcome(error), error);
  }

  /** @internal */
  runHandler<T>(handle: () => Promise<T>): Promise<T> {
    const { span } = this;
    if (!span) {
      return handle();
    }
    span.addEvent('idempotency.handler');
    return this.tracing.activate(span, handle).then((result) => {
      span.addEvent('idempotency.handler.end');
      return result;
    });
  }

  /** @internal */
  committed(response: RecordedResponse): void {
    if (this.ended) {
      return;
    }
    const claimToCommitMs = performance.now() - this.claimedAt;
    const { metrics, channels } = this.tracing;
    metrics.recordClaimToCommit(this.source.consumer, claimToCommitMs);
    this.span?.addEvent('idempotency.commit', { 'idempotency.claim_to_commit_ms': claimToCommitMs });
    if (channels.commit.hasSubscribers) {
      channels.commit.publish(this.message({ claimToCommitMs }));
    }
    this.end('processed', undefined, response.status);
  }

  /** @internal */
  end(outcome: DeliveryOutcome, error?: unknown, status?: number | null): void {
    if (this.ended) {
      return;
    }
    this.ended = true;
    const { consumer } = this.source;
    this.tracing.metrics.recordInFlight(consumer, -1);
    const answered = classify(error)?.status;
    if (answered === 409 || answered === 503) {
      this.tracing.metrics.recordRefusal(consumer, answered);
    }
    const { span } = this;
    if (!span) {
      return;
    }
    span.setAttribute('idempotency.outcome', outcome);
    span.setAttribute('idempotency.replayed', outcome === 'duplicate');
    const code = status ?? answered;
    if (code != null && this.source.transport === 'http') {
      span.setAttribute('http.response.status_code', code);
    }
    if (error !== undefined) {
      span.setAttribute('error.type', error instanceof Error ? error.name : 'Error');
      if (outcome === 'failed' || outcome === 'unavailable') {
        span.recordException(error instanceof Error ? error : String(error));
      }
    }
    if (outcome === 'failed' || outcome === 'unavailable') {
      this.tracing.setError(span, error instanceof Error ? error.message : outcome);
    }
    if (outcome !== 'processed' && outcome !== 'duplicate' && this.claimedAt > 0) {
      span.addEvent('idempotency.rollback');
    }
    span.end();
  }

  private message<T extends object>(fields: T): T & { consumer: string; sender: string; key?: string } {
    const request = this.request!;
    const message = { consumer: request.consumer, sender: request.sender, ...fields };
    return this.tracing.recordKey ? { ...message, key: request.key } : message;
  }
}

/** A claim won, traced: its run is the handler's part of the span, its commit or rollback ends the trace. */
class TracedDelivery implements OpenDelivery {
  constructor(
    private readonly inner: OpenDelivery,
    private readonly trace: DeliveryTrace,
  ) {}

  get rollbackUndoesWork(): boolean {
    return this.inner.rollbackUndoesWork;
  }

  run<T>(handle: () => Promise<T>): Promise<T> {
    return this.inner.run(() => this.trace.runHandler(handle));
  }

  async commit(response: RecordedResponse, options?: CommitOptions): Promise<void> {
    try {
      await this.inner.commit(response, options);
    } catch (error) {
      this.trace.end(failureOutcome(error), error);
      throw error;
    }
    this.trace.committed(response);
  }

  async rollback(outcome: Exclude<DeliveryOutcome, 'processed' | 'duplicate'>, cause?: unknown): Promise<void> {
    try {
      await this.inner.rollback(outcome, cause);
    } finally {
      this.trace.end(outcome, cause);
    }
  }
}
