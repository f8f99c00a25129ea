import type { Type } from '@nestjs/common';
import { golevelupRabbitHandlerKind } from './golevelup-rabbitmq/golevelup-rabbitmq.handler-kind.js';
import type { MessageTransport } from './message-transport.js';

/**
 * A transport whose handlers are methods of providers rather than of controllers (a BullMQ
 * processor's `process`, a `@RabbitSubscribe` method), recognised by its framework's metadata
 * alone, so its package is not loaded to find them.
 * @internal
 */
export interface ProviderHandlerKind {
  /** The transport's name, as its `MessageTransport` names it. */
  readonly transport: string;
  /**
   * The handler's external contract, its default consumer (`bullmq payments`: the queue it
   * consumes), when `methodName` of `target` is one of this transport's handlers; else undefined.
   */
  contract(target: Type, methodName: string): string | undefined;
  /**
   * For a framework that calls its handlers itself, without Nest's interceptors (BullMQ's
   * `WorkerHost.process`): the adapter that reads each call, given as an execution context of
   * this transport's type whose arguments are the call's. Absent where calls go through Nest's
   * interceptors (`@RabbitSubscribe`).
   */
  readonly calls?: MessageTransport;
}

/** Every transport whose handlers are provider methods; each adapter's folder supplies its kind. @internal */
export const PROVIDER_HANDLER_KINDS: readonly ProviderHandlerKind[] = [golevelupRabbitHandlerKind];

/** The kind and contract of a provider's method that a transport delivers to; undefined when none does. */
export function providerHandlerOf(target: Type, methodName: string): { readonly kind: ProviderHandlerKind; readonly contract: string } | undefined {
  for (const kind of PROVIDER_HANDLER_KINDS) {
    const contract = kind.contract(target, methodName);
    if (contract !== undefined) {
      return { kind, contract };
    }
  }
  return undefined;
}
