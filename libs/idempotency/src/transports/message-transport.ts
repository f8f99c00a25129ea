import type { ExecutionContext, Provider, Type } from '@nestjs/common';
import type { InFlightPolicy } from '../options/handler-values.js';

/**
 * How a message is to be settled with its broker once every idempotent handler it reached has
 * ended: `ack` (processed, or a duplicate: done), `retry` (redelivered after a delay, until
 * `maxAttempts` failures; then dead-lettered), `dead-letter` (it can never succeed: no usable key,
 * a key reused with another payload).
 */
export type Verdict =
  | { readonly kind: 'ack' }
  | ({
      readonly kind: 'retry';
      /** What identifies the message across its redeliveries, for transports that count failures themselves. */
      readonly attemptKey: string;
      readonly maxAttempts: number;
      /** The delay before the first redelivery; a transport doubles it with each further failure. */
      readonly retryDelayMs: number;
    } & FailureCause)
  | ({ readonly kind: 'dead-letter' } & FailureCause);

/** What a failed delivery's log line says of the handler and the failure, beside what the transport says of the message. */
export interface FailureCause {
  /** The handler's consumer. */
  readonly consumer: string;
  /** The message's idempotency key; undefined when it could not be read. */
  readonly key: string | undefined;
  /** Why it failed: the error's message. */
  readonly reason: string;
}

/** One message as a transport adapter reads it for the claim core. */
export interface InboundMessage {
  /** The payload the handler receives: a `key: { body: 'path' }` is read from it. */
  readonly payload: unknown;
  /** The broker's own id of the message, the default key; undefined when it carries none. */
  readonly messageId: unknown;
  /** The value of the message header `name`, if it has one. */
  header(name: string): unknown;
  /**
   * What a handler's `'request'` fingerprint (a mutation's default, whatever its key's source) covers: a
   * GraphQL mutation's arguments. Unset: nothing of the message is compared.
   */
  readonly request?: unknown;
  /**
   * For a transport whose client receives a reply in another form than the handler returned it
   * (GraphQL: serialized by each scalar, under the schema's field names): what is recorded of the
   * reply, and the answer made of a record, given to the first delivery and to its duplicates
   * alike. Unset: the reply is recorded as JSON, and a duplicate answered the recorded JSON.
   */
  readonly answering?: ReplyAnswering;
  /**
   * Resolves true when the broker's own position shows the message settled already (Kafka with
   * `kafkaOffsets: true`: a record behind its partition's stored position, fetched before the seek
   * to that position took effect): it is then settled as an ack, neither claimed nor handled.
   */
  readonly settledAlready?: Promise<boolean>;
  /**
   * Runs under the claim once the handler returned, before the claim's COMMIT: what the transport
   * adds to that transaction (Kafka with `kafkaOffsets: true`: the consumer's position).
   */
  readonly beforeCommit?: () => void;
  /**
   * Settles the message with the broker, once, after the claim ended (committed, found a
   * duplicate, or rolled back), and logs a failure; `consumer` is the handler's. Where the
   * framework settles by itself (request-reply) it only logs. Where the framework settles a message
   * by what its handler answers, a failed delivery's settle says what to answer in place of its error.
   * Where settling takes the broker a round trip that must end before the next message (Kafka's
   * offset commit), an ack's settle returns its promise, and the delivery ends once it resolved.
   */
  readonly settle?: (verdict: Verdict, consumer: string) => FailureAnswer | Promise<void> | void;
  /**
   * For a framework that takes a handler's return value as its verdict (golevelup's `Nack`): the
   * reply as it is, or a throw when it refuses the message, so that its claim rolls back.
   */
  readonly checkReply?: (reply: unknown) => unknown;
}

/** How a transport records a reply and answers a recorded one (`InboundMessage.answering`). */
export interface ReplyAnswering {
  /** What is recorded of the handler's reply, as JSON; it runs under the claim, before the commit. */
  record(reply: unknown): Promise<unknown>;
  /** The answer of a recorded reply: `duplicate` is true for a duplicate's. */
  answer(recorded: unknown, duplicate: boolean): unknown;
}

/**
 * What a failed delivery answers a framework that settles a message by its handler's answer: an
 * error to throw in place of the delivery's own (BullMQ's `UnrecoverableError`: no further
 * attempts), or a reply to return instead of throwing (golevelup's `Nack`, after the retry delay).
 * `reported`: the adapter settled the message with its broker and logged the failure itself, so
 * the error goes on marked, for the module's exception filter to answer it without Nest's log line.
 */
export type FailureAnswer = { readonly error: Error } | { readonly reply: Promise<unknown> } | { readonly reported: true };

/**
 * One broker's side of the seam between a transport and the claim core: which deliveries are
 * its own, where their key and payload are, how they are settled. The core (`MessageDelivery`)
 * knows no transport; an adapter knows nothing of claims. Each adapter is listed once, in
 * `transports.ts`, as a `TransportDefinition` with the boot checks that go with it.
 * @internal
 */
export interface MessageTransport {
  /** The transport's name in metrics and traces: `rabbitmq`, `nats`, `bullmq`, ... */
  readonly name: string;
  /**
   * Where the default key is read, for errors: `the AMQP messageId property`; undefined for a
   * transport whose messages carry no id (the handler must then set `key`).
   */
  readonly messageIdSource: string | undefined;
  /**
   * The message `context` delivers when it is this transport's, else undefined. Reading it may
   * enlist the delivery for settlement (several handlers of one message settle it together):
   * `fanOut` says how many idempotent handlers a message of a pattern reaches (0: not known).
   */
  read(context: ExecutionContext, fanOut: (pattern: string) => number): InboundMessage | undefined;
  /**
   * What a delivery does while its twin is in flight, unless its handler sets `inFlight`.
   * @default 'wait'
   */
  readonly defaultInFlight?: InFlightPolicy;
}

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
   * this transport's type whose arguments are the call's; a provider of the module, resolved in
   * each application. Absent where calls go through Nest's interceptors (`@RabbitSubscribe`).
   */
  readonly calls?: Type<MessageTransport>;
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

/**
 * One transport as the module lists it (`transports.ts`): its adapter, the boot checks that refuse
 * settings of its framework that would lose messages, and, where its handlers are provider
 * methods, how they are found.
 * @internal
 */
export interface TransportDefinition {
  /** The adapter Nest's interceptors choose from (`MESSAGE_TRANSPORTS`); absent where every call reaches the core as a provider call (`providerHandlers.calls`). */
  readonly adapter?: Type<MessageTransport>;
  /** Its boot checks, and the providers its adapter and its checks use: providers of the module. */
  readonly providers: readonly Provider[];
  /** How its handlers are found where they are provider methods. */
  readonly providerHandlers?: ProviderHandlerKind;
}

/** The injection token of the adapters the interceptor chooses from, in order. @internal */
export const MESSAGE_TRANSPORTS = Symbol('MESSAGE_TRANSPORTS');

/** The injection token of the `ProviderHandlerKind` of every transport that has one. @internal */
export const PROVIDER_HANDLER_KINDS = Symbol('PROVIDER_HANDLER_KINDS');

/** The kind and contract of a provider's method that one of `kinds` delivers to; undefined when none does. @internal */
export function providerHandlerOf(
  kinds: readonly ProviderHandlerKind[],
  target: Type,
  methodName: string,
): { readonly kind: ProviderHandlerKind; readonly contract: string } | undefined {
  for (const kind of kinds) {
    const contract = kind.contract(target, methodName);
    if (contract !== undefined) {
      return { kind, contract };
    }
  }
  return undefined;
}
