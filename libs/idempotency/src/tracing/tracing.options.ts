import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { toFlag } from '../options/option-values.js';
import { tracingMessages } from './tracing.messages.js';

/** What the spans and diagnostics-channel events carry. */
export interface TracingOptions {
  /**
   * Put the idempotency key on the span (`idempotency.key`, and `messaging.message.id` for
   * messages) and in the diagnostics-channel messages. Keys can be sensitive (an email address,
   * an order number a client chose), so they are left out unless this says otherwise.
   * @default false
   */
  recordKey?: boolean;
}

/** The token of the tracing's slice of the module's options. @internal */
export const TRACING_OPTIONS = Symbol('IDEMPOTENCY:TRACING_OPTIONS');

/**
 * `tracing` with its defaults applied.
 * @internal
 */
export interface ResolvedTracingOptions {
  /** False: no spans, even with `@opentelemetry/api` installed. */
  spans: boolean;
  recordKey: boolean;
}

/**
 * `tracing` with its defaults applied. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveTracing(tracing: TracingOptions | false): ResolvedTracingOptions {
  if (tracing === false) {
    return { spans: false, recordKey: false };
  }
  if (typeof tracing !== 'object' || tracing === null) {
    throw new IdempotencyOptionsError(tracingMessages.invalidTracing(tracing));
  }
  return { spans: true, recordKey: toFlag('tracing.recordKey', tracing.recordKey ?? false) };
}
