import type { ExecutionContext } from '@nestjs/common';
import type { Duration } from '../duration/duration.js';

/**
 * Where a message's idempotency key is read from:
 * - `{ header: 'Idempotency-Key' }`: a request header (HTTP) or message header (brokers);
 * - `{ body: 'data.id' }`: a dotted path in the HTTP body or the message payload (webhooks);
 * - a function of the execution context that returns the key.
 */
export type KeySource =
  | { header: string }
  | { body: string }
  | ((context: ExecutionContext) => string | number | undefined);

/** What a delivery does while its twin (same consumer and key) is being processed and not committed. */
export type InFlightPolicy = 'reject' | 'wait';

/** Options of `@IdempotentHandler()`. Every field is optional. */
export interface IdempotentHandlerOptions {
  /**
   * Where the idempotency key comes from.
   * @default `{ header: 'Idempotency-Key' }` for HTTP; the AMQP `messageId` property for RabbitMQ;
   * the `Nats-Msg-Id` header for NATS
   */
  key?: KeySource;
  /**
   * Who sent the message (a webhook provider, an upstream service): recorded with each claim and
   * used to count duplicates per sender.
   * @default 'default'
   */
  sender?: string | ((context: ExecutionContext) => string);
  /**
   * The name the claim is scoped to: a key is processed once per consumer. Each handler needs its
   * own; the module refuses to start when two handlers claim the same name.
   * @default the class and method name, e.g. `'CreditsController.grant'`
   */
  consumer?: string;
  /**
   * How long the id is remembered after processing; must outlast the sender's redeliveries.
   * @default the module's `retention` (`'7d'`)
   */
  retention?: Duration;
  /**
   * `'reject'` answers a delivery whose twin is still in flight at once (HTTP 409 with
   * `Retry-After`; a broker message is requeued); `'wait'` waits for the twin to commit (up to
   * the module's `inFlightWaitTimeout`) and replays its response, or processes if the twin
   * rolled back.
   * @default 'reject' for HTTP, 'wait' for message handlers
   */
  inFlight?: InFlightPolicy;
  /**
   * RabbitMQ: how many failed deliveries of a message before it is nacked without requeue, so the
   * queue's dead-letter exchange takes it. Counted by the queue's `x-delivery-count` header where
   * it has one (quorum queues), else by this process.
   * @default 5
   */
  maxAttempts?: number;
}
