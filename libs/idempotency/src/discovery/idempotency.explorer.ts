import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { IdempotencyMetadataAccessor, type ResolvedHandlerOptions } from '../decorators/idempotency-metadata.accessor.js';
import { formatDuration } from '../duration/duration.js';
import { IdempotencyConsumerConflictError } from '../errors/idempotency-consumer-conflict.error.js';
import { IdempotencyRetentionError } from '../errors/idempotency-retention.error.js';
import { RESOLVED_OPTIONS } from '../idempotency.internal-constants.js';
import { messages } from '../idempotency.messages.js';
import type { ResolvedIdempotencyOptions } from '../idempotency.options.js';

/** An `@IdempotentHandler()` found in a controller, with its options resolved. */
interface DiscoveredHandler {
  /** `Class.method`. */
  readonly name: string;
  /** The module that declares the controller. */
  readonly moduleName: string;
  readonly options: ResolvedHandlerOptions;
}

/**
 * Finds every `@IdempotentHandler()` at start-up and refuses to start when two of them claim one
 * consumer name, or when one keeps its ids for less than its sender's redelivery horizon.
 */
@Injectable()
export class IdempotencyExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: IdempotencyMetadataAccessor,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
  ) {}

  onModuleInit(): void {
    const handlers = this.findHandlers();
    this.checkConsumersAreUnique(handlers);
    handlers.forEach((handler) => this.checkRetention(handler));
  }

  private findHandlers(): DiscoveredHandler[] {
    const seen = new Set<object>();
    const handlers: DiscoveredHandler[] = [];
    for (const wrapper of this.discovery.getControllers()) {
      const { metatype, instance } = wrapper;
      if (!metatype || !instance || seen.has(metatype)) {
        continue;
      }
      seen.add(metatype);
      const prototype = Object.getPrototypeOf(instance) as Record<string, (...args: unknown[]) => unknown>;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        if (!this.accessor.getOptions(prototype[method])) {
          continue;
        }
        handlers.push({
          name: `${metatype.name}.${method}`,
          moduleName: wrapper.host?.name ?? 'an unknown module',
          options: this.accessor.resolveFor(metatype, prototype[method]),
        });
      }
    }
    return handlers;
  }

  private checkConsumersAreUnique(handlers: DiscoveredHandler[]): void {
    const byConsumer = new Map<string, DiscoveredHandler>();
    for (const handler of handlers) {
      const twin = byConsumer.get(handler.options.consumer);
      if (twin) {
        throw new IdempotencyConsumerConflictError(handler.options.consumer, [twin, handler].map(label));
      }
      byConsumer.set(handler.options.consumer, handler);
    }
  }

  private checkRetention({ name, options }: DiscoveredHandler): void {
    const horizons = this.options.senderHorizonsMs;
    const dynamic = typeof options.sender === 'function';
    const sender = dynamic ? longestHorizonSender(horizons) : (options.sender as string);
    const horizonMs = sender === undefined ? undefined : horizons[sender];
    if (sender === undefined || horizonMs === undefined || options.retentionMs >= horizonMs) {
      return;
    }
    const retention = formatDuration(options.retentionMs);
    const horizon = formatDuration(horizonMs);
    const explain = dynamic ? messages.retentionTooShortForAnySender : messages.retentionTooShort;
    throw new IdempotencyRetentionError(explain(name, retention, sender, horizon), name, retention, sender, horizon);
  }
}

function label(handler: DiscoveredHandler): string {
  return `${handler.name} (in ${handler.moduleName})`;
}

function longestHorizonSender(horizons: Record<string, number>): string | undefined {
  return Object.keys(horizons).sort((a, b) => horizons[b] - horizons[a])[0];
}
