import { type ExecutionContext, Injectable, type OnModuleDestroy, type Type } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { type DiscoveredHandler, IdempotencyExplorer } from '../discovery/idempotency.explorer.js';
import { MessageDelivery } from './message-delivery.js';
import { enlistProviderCalls, registerEnlister } from './provider-calls.js';

/**
 * Enlists this application's idempotent provider handlers: those a framework calls without Nest's
 * interceptors (BullMQ, SQS) enter the claim core through their transport's adapter, reading the
 * call's arguments; those called through the interceptors (`@RabbitSubscribe`) run as they are.
 */
@Injectable()
export class ProviderCallEntries implements OnModuleDestroy {
  /** The methods enlisted so far, by instance: one instance may have several idempotent handlers. */
  private readonly enlisted = new Map<object, Set<string>>();
  private readonly unregister: () => void;

  constructor(
    private readonly explorer: IdempotencyExplorer,
    private readonly delivery: MessageDelivery,
  ) {
    this.unregister = registerEnlister(() => this.enlist());
  }

  onModuleDestroy(): void {
    this.unregister();
  }

  private enlist(): void {
    for (const found of this.explorer.discovered()) {
      const instance = found.provider?.wrapper.instance as object | undefined;
      const methods = instance && (this.enlisted.get(instance) ?? new Set<string>());
      if (!found.provider || !instance || !methods || methods.has(found.provider.methodName)) {
        continue;
      }
      this.enlisted.set(instance, methods.add(found.provider.methodName));
      enlistProviderCalls(instance, found.provider.methodName, this.entryFor(found, instance));
    }
  }

  private entryFor(found: DiscoveredHandler, instance: object): (args: unknown[], run: () => Promise<unknown>) => Promise<unknown> {
    const { kind, methodName } = found.provider!;
    const transport = kind.calls;
    if (!transport) {
      return (_args, run) => run();
    }
    const target = instance.constructor as Type;
    const method = target.prototype[methodName] as (...args: unknown[]) => unknown;
    return (args, run) => {
      const context = new ExecutionContextHost(args, target, method);
      context.setType(transport.name);
      const message = transport.read(context as ExecutionContext);
      if (!message) {
        throw new TypeError(`${transport.name} read no message from a call of ${found.handler.name}`);
      }
      return this.delivery.deliver(found.handler, context, transport, message, run);
    };
  }
}
