import type { Type } from '@nestjs/common';
import { BULLMQ_PROCESSORS } from './bullmq/bullmq.transport.js';
import { golevelupRabbitHandlerKind } from './golevelup-rabbitmq/golevelup-rabbitmq.handler-kind.js';
import { GRAPHQL_RESOLVERS } from './graphql/graphql-resolvers.handler-kind.js';
import type { MessageTransport } from './message-transport.js';
import { SQS_HANDLERS } from './sqs/sqs.transport.js';

/**
 * A transport whose handlers are methods of providers rather than of controllers (a BullMQ
 * processor's `process`, a `@RabbitSubscribe` method, a GraphQL resolver's `@Mutation()`), recognised by its framework's metadata
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
   * interceptors (`@RabbitSubscribe`). A class is a provider of the module, resolved in each
   * application (the adapter then reads that application's providers: SQS's consumers).
   */
  readonly calls?: MessageTransport | Type<MessageTransport>;
  /**
   * For a framework that reads a call's answer as the messages' settlement (sqs-consumer deletes
   * the messages a handler returns): the call's messages, each delivered by its own claim, one
   * after another until one fails, and what the call answers for those that ended well. Absent:
   * a call is one message, answered with the handler's reply.
   */
  splitCall?(method: object, args: unknown[]): ProviderCallSplit;
}

/** The messages of one call of a provider handler, and the call's answer. @internal */
export interface ProviderCallSplit {
  /** Each message: what its execution context reads (`getArgByIndex(0)`: the message) and the arguments the method gets for it alone. */
  readonly messages: readonly { readonly contextArgs: unknown[]; readonly callArgs: unknown[] }[];
  /**
   * What the call answers, given how many messages (from the first) committed or were duplicates,
   * and the failure of the next one when one failed; it may throw that failure.
   */
  answer(settled: number, failure?: unknown): unknown;
}

/** Every transport whose handlers are provider methods; each adapter's folder supplies its kind. @internal */
export const PROVIDER_HANDLER_KINDS: readonly ProviderHandlerKind[] = [BULLMQ_PROCESSORS, SQS_HANDLERS, golevelupRabbitHandlerKind, GRAPHQL_RESOLVERS];

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
