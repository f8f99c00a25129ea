import { Inject, Injectable, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { toMilliseconds } from '../duration/duration.js';
import { IdempotencyOptionsError } from '../errors/idempotency-options.error.js';
import { messages } from '../idempotency.messages.js';
import { HANDLER_OPTIONS_METADATA, RESOLVED_OPTIONS } from '../idempotency.internal-constants.js';
import type { ResolvedIdempotencyOptions } from '../idempotency.options.js';
import type { IdempotentHandlerOptions, InFlightPolicy, KeySource } from './idempotent-handler.options.js';

/** A handler's options with the module's defaults applied. */
export interface ResolvedHandlerOptions {
  consumer: string;
  key: KeySource | undefined;
  sender: IdempotentHandlerOptions['sender'] & {};
  retentionMs: number;
  /** Unset means the transport's default: `'reject'` for HTTP, `'wait'` for message handlers. */
  inFlight: InFlightPolicy | undefined;
  maxAttempts: number;
}

/** The one reader of `@IdempotentHandler()` metadata; resolves each handler's options once. */
@Injectable()
export class IdempotencyMetadataAccessor {
  private readonly resolved = new WeakMap<object, ResolvedHandlerOptions>();

  constructor(
    private readonly reflector: Reflector,
    @Inject(RESOLVED_OPTIONS) private readonly moduleOptions: ResolvedIdempotencyOptions,
  ) {}

  /** The raw options of a decorated method, or undefined when it is not an idempotent handler. */
  getOptions(handler: object): IdempotentHandlerOptions | undefined {
    return this.reflector.get<IdempotentHandlerOptions | undefined>(HANDLER_OPTIONS_METADATA, handler as never);
  }

  /** The options of the handler that `context` is about to run. */
  resolve(context: ExecutionContext): ResolvedHandlerOptions {
    const handler = context.getHandler();
    let options = this.resolved.get(handler);
    if (!options) {
      options = this.resolveFor(context.getClass(), handler);
      this.resolved.set(handler, options);
    }
    return options;
  }

  /** Resolves the options of `handler`, a method of `target`; throws IdempotencyOptionsError. */
  resolveFor(target: { name: string }, handler: { name: string }): ResolvedHandlerOptions {
    const options = this.getOptions(handler) ?? {};
    return {
      consumer: options.consumer ?? `${target.name}.${handler.name}`,
      key: options.key,
      sender: options.sender ?? 'default',
      retentionMs: options.retention
        ? toMilliseconds(`retention of ${target.name}.${handler.name}`, options.retention)
        : this.moduleOptions.retentionMs,
      inFlight: options.inFlight,
      maxAttempts: toAttemptLimit(`maxAttempts of ${target.name}.${handler.name}`, options.maxAttempts ?? 5),
    };
  }
}

function toAttemptLimit(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new IdempotencyOptionsError(messages.invalidAttemptLimit(name, value));
  }
  return value;
}
