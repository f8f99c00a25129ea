/**
 * One outbox message as the relay hands it to a publisher: what `Outbox.publish()` stored.
 */
export interface OutgoingMessage {
  /** The message's stable id: the downstream consumer's idempotency key. Every publish of the message carries it. */
  readonly id: string;
  /** Where the broker routes it: a queue or routing key (RabbitMQ), a subject (NATS JetStream), a queue name (BullMQ), a queue URL (SQS), a topic (Kafka). */
  readonly address: string;
  /** Nest's message pattern, for a consumer that is a Nest microservice (`@EventPattern(pattern)`); undefined for a raw message. */
  readonly pattern: string | undefined;
  /** The message's headers. */
  readonly headers: Readonly<Record<string, string>>;
  /** The payload as the JSON text `Outbox.publish()` stored. */
  readonly payload: string;
  /** Messages of one ordering key are published one at a time, in the order their transactions committed; undefined: no order. */
  readonly orderingKey: string | undefined;
}

/** What the relay tells a publisher about one publish of a message besides the message. */
export interface PublishAttempt {
  /** 1 for the message's first publish, 2 for its first retry, and so on. */
  readonly attempt: number;
  /** Why the previous publish of the message failed; undefined at the first. */
  readonly lastError: string | undefined;
  /**
   * How long the relay waits for this publish's confirmation (`publishTimeout`), after which it
   * counts it as failed and aborts `signal`.
   */
  readonly timeoutMs: number;
  /**
   * Aborted when the relay stopped waiting (`publishTimeout` passed): drop the message if it has
   * not left yet (a client that buffers while disconnected would send it later, beside its retry),
   * and stop waiting for the broker.
   */
  readonly signal: AbortSignal;
}

/**
 * Sends outbox messages to one broker, for the relay. The built-in ones: `RabbitMqPublisher`
 * (publisher confirms, the id as the AMQP `messageId`), `JetStreamPublisher` (the id as
 * `Nats-Msg-Id`), `BullMqPublisher` (the id as the `jobId`), `SqsPublisher` (the id as the
 * `MessageDeduplicationId` on FIFO queues), `KafkaPublisher` (the id as the `Idempotency-Key`
 * header). Each writes the id where this module's consumer of the same transport reads its key by
 * default.
 */
export interface OutboxPublisher {
  /**
   * Sends one message; resolves only once the broker confirmed it (the relay then marks it
   * dispatched), rejects when it could not (the relay retries it after a delay). A message may be
   * sent more than once (a relay that died before it marked it): it carries the same id each time.
   * Reject with `IdempotencyPublishRefusedError` when the message can never be sent as it is: it is
   * parked as a dead letter at once.
   */
  publish(message: OutgoingMessage, attempt: PublishAttempt): Promise<void>;
  /**
   * Why this publisher could never send `message` (a pattern where its transport has none, an
   * address of the wrong form), checked by `Outbox.publish()` before anything is written; undefined when it can.
   */
  refuse?(message: OutgoingMessage): string | undefined;
  /** Closes what the publisher opened; called when the application shuts down. */
  close?(): Promise<void>;
}
