import type { ExecutionContext } from '@nestjs/common';
import type { InFlightPolicy } from '../decorators/idempotent-handler.options.js';

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
   * What a handler's `'request'` fingerprint (the default for a key the client chose) covers: a
   * GraphQL mutation's arguments. Unset: nothing of the message is compared.
   */
  readonly request?: () => unknown;
  /**
   * A duplicate's answer, made of the reply recorded as JSON (GraphQL: custom scalars such as
   * `DateTime` read back by the field's type, the HTTP response marked `Idempotent-Replayed: true`).
   * Unset: the recorded reply as it is.
   */
  readonly replay?: (recorded: unknown) => unknown;
  /**
   * Settles the message with the broker, once, after the claim ended (committed, found a
   * duplicate, or rolled back), and logs a failure; `consumer` is the handler's. Where the
   * framework settles by itself (request-reply) it only logs. Where the framework settles a message
   * by what its handler answers, a failed delivery's settle says what to answer in place of its error.
   */
  readonly settle?: (verdict: Verdict, consumer: string) => FailureAnswer | void;
  /**
   * For a framework that takes a handler's return value as its verdict (golevelup's `Nack`): the
   * reply as it is, or a throw when it refuses the message, so that its claim rolls back.
   */
  readonly checkReply?: (reply: unknown) => unknown;
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
 * knows no transport; an adapter knows nothing of claims. Adapters are providers of
 * `IdempotencyModule` listed under `MESSAGE_TRANSPORTS`; whatever an adapter checks at boot (a
 * consumer that auto-acknowledges, say) it does in its own lifecycle hooks.
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
   * enlist the delivery for settlement (several handlers of one message settle it together).
   */
  read(context: ExecutionContext): InboundMessage | undefined;
  /**
   * What a delivery does while its twin is in flight, unless its handler sets `inFlight`.
   * @default 'wait'
   */
  readonly defaultInFlight?: InFlightPolicy;
}

/** The injection token of the adapters the interceptor chooses from, in order. @internal */
export const MESSAGE_TRANSPORTS = Symbol('MESSAGE_TRANSPORTS');
