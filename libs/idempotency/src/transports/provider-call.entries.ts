import { type ExecutionContext, Injectable, type OnModuleDestroy, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { type DiscoveredHandler, IdempotencyExplorer } from '../discovery/idempotency.explorer.js';
import { HandlerPlans } from './handler-plans.js';
import { MessageDelivery } from './message-delivery.js';
import { enlistProviderCalls, type ProviderCallEntry, registerEnlister } from './provider-calls.js';

/**
 * Enlists this application's idempotent provider handlers: those a framework calls without Nest's
 * interceptors (BullMQ, SQS) enter the claim core through their transport's adapter, reading the
 * call's arguments; those called through the interceptors (`@RabbitSubscribe`) run as they are.
 */
@Injectable()
export class ProviderCallEntries implements OnModuleDestroy {
  private readonly enlisted = new Set<DiscoveredHandler>();
  private readonly unregister: () => void;

  constructor(
    private readonly explorer: IdempotencyExplorer,
    private readonly delivery: MessageDelivery,
    private readonly plans: HandlerPlans,
    private readonly moduleRef: ModuleRef,
  ) {
    this.unregister = registerEnlister(() => this.enlist());
  }

  onModuleDestroy(): void {
    this.unregister();
  }

  private enlist(): void {
    for (const found of this.explorer.discovered()) {
      const instance = found.provider?.wrapper.instance as object | undefined;
      // Each handler, not each instance: a provider may have several idempotent methods.
      if (!found.provider || !instance || this.enlisted.has(found)) {
        continue;
      }
      this.enlisted.add(found);
      enlistProviderCalls(instance, found.provider.methodName, this.entryFor(found, instance));
    }
  }

  private entryFor(found: DiscoveredHandler, instance: object): ProviderCallEntry {
    const { kind, methodName } = found.provider!;
    if (!kind.calls) {
      return (_args, run) => run();
    }
    const transport = this.moduleRef.get(kind.calls);
    const plan = this.plans.ofProvider(found.handler);
    const target = instance.constructor as Type;
    const method = target.prototype[methodName] as (...args: unknown[]) => unknown;
    const deliver = (contextArgs: unknown[], run: () => Promise<unknown>) => {
      const context = new ExecutionContextHost(contextArgs, target, method);
      context.setType(transport.name);
      const message = transport.read(context as ExecutionContext, plan.fanOut);
      if (!message) {
        throw new TypeError(`${transport.name} read no message from a call of ${found.handler.name}`);
      }
      return this.delivery.deliver(plan, context, transport, message, run);
    };
    if (!kind.splitCall) {
      return (args, run) => deliver(args, run);
    }
    const split = kind.splitCall.bind(kind);
    return async (args, run) => {
      const { messages, answer } = split(method, args);
      let settled = 0;
      for (const { contextArgs, callArgs } of messages) {
        try {
          await deliver(contextArgs, () => run(callArgs));
        } catch (failure) {
          // The messages from this one on are left to the broker.
          return answer(settled, failure);
        }
        settled++;
      }
      return answer(settled);
    };
  }
}
