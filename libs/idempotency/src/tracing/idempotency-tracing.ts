import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { channel } from 'node:diagnostics_channel';
import type { IdempotencyMode } from '../options/handler-values.js';
import { IDEMPOTENCY_CHANNELS } from '../idempotency.constants.js';
import { loadIfInstalled } from '../optional/load-optional-package.js';
import type { PurgeRun } from '../errors/idempotency.errors.js';
import { type ResolvedTracingOptions, TRACING_OPTIONS } from './tracing.options.js';

type OpenTelemetry = typeof import('@opentelemetry/api');

/** The tracer's name: the instrumentation scope of the module's spans. */
const TRACER_NAME = 'nestjs-idempotent-consumer';

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
 * Where a delivery came from, for the span's attributes.
 * @internal
 */
export interface DeliverySource {
  readonly consumer: string;
  readonly mode: IdempotencyMode;
  /** `http`, or the messaging system (`rabbitmq`, `nats`, ...). */
  readonly transport: string;
  /** HTTP: the request's method. */
  readonly method?: string;
}

/**
 * What the module traces with: OpenTelemetry, when `@opentelemetry/api` is installed (loaded at
 * start-up, like `prom-client`), for one span per delivery, and the `node:diagnostics_channel`
 * channels of `IDEMPOTENCY_CHANNELS`. The delivery observer alone writes a delivery's span and
 * channel messages; the purge publishes its runs here, the outbox relay its settled messages.
 * @internal
 */
@Injectable()
export class IdempotencyTracing implements OnModuleInit {
  private otel: OpenTelemetry | undefined;
  /** @internal */
  readonly channels = {
    claim: channel(IDEMPOTENCY_CHANNELS.claim),
    duplicate: channel(IDEMPOTENCY_CHANNELS.duplicate),
    commit: channel(IDEMPOTENCY_CHANNELS.commit),
    purge: channel(IDEMPOTENCY_CHANNELS.purge),
    rejected: channel(IDEMPOTENCY_CHANNELS.rejected),
    leaseLost: channel(IDEMPOTENCY_CHANNELS.leaseLost),
    outbox: channel(IDEMPOTENCY_CHANNELS.outbox),
  };

  constructor(@Inject(TRACING_OPTIONS) private readonly options: ResolvedTracingOptions) {}

  async onModuleInit(): Promise<void> {
    if (this.options.spans) {
      this.otel = await loadIfInstalled(() => import('@opentelemetry/api'));
    }
  }

  /** Whether deliveries may have spans: `@opentelemetry/api` is installed and spans are on. */
  get tracesSpans(): boolean {
    return this.otel !== undefined;
  }

  /** Whether the key goes on spans and channel messages. */
  get recordKey(): boolean {
    return this.options.recordKey;
  }

  /** Publishes a purge run on its channel. */
  purged(run: PurgeRun): void {
    if (this.channels.purge.hasSubscribers) {
      this.channels.purge.publish({ outcome: run.outcome, rows: run.rows, batches: run.batches, durationMs: run.durationMs });
    }
  }

  /** Runs `work` with `span` as the active span, so that the handler's own spans (SQL, HTTP calls) are its children. */
  activate<T>(span: TraceSpan, work: () => T): T {
    const { context, trace } = this.otel!;
    return context.with(trace.setSpan(context.active(), span as never), work);
  }

  /** Marks `span` as failed. */
  setError(span: TraceSpan, message: string): void {
    span.setStatus({ code: this.otel!.SpanStatusCode.ERROR, message });
  }

  /**
   * A span of one delivery, started in the active context (the HTTP server's or the consumer's span
   * is its parent); undefined when nothing would see it (no `@opentelemetry/api`, spans off, no SDK,
   * sampled out).
   */
  startSpan({ consumer, mode, transport, method }: DeliverySource): TraceSpan | undefined {
    if (!this.otel) {
      return undefined;
    }
    const { trace, ProxyTracerProvider, SpanKind } = this.otel;
    const provider = trace.getTracerProvider();
    // The global provider stands for the SDK's once one is registered; with none, its tracers' spans
    // record nothing, so the delivery does without one, as below, with no span made to find that out.
    const tracer = provider instanceof ProxyTracerProvider ? provider.getDelegateTracer(TRACER_NAME) : provider.getTracer(TRACER_NAME);
    if (!tracer) {
      return undefined;
    }
    const attributes: Record<string, string> = { 'idempotency.consumer': consumer, 'idempotency.mode': mode };
    if (transport === 'http') {
      attributes['http.request.method'] = method ?? '_OTHER';
    } else {
      attributes['messaging.system'] = transport;
      attributes['messaging.operation.type'] = 'process';
    }
    const span = tracer.startSpan(`idempotency ${consumer}`, { kind: SpanKind.INTERNAL, attributes });
    // No SDK registered, or sampled out: nothing would see the span, so the delivery does without it
    // (its handler's own spans stay children of the same trace through the caller's span).
    return span.isRecording() ? span : undefined;
  }
}
