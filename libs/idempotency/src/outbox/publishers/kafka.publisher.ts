import { IdempotencyPublishRefusedError } from '../../errors/idempotency.errors.js';
import { IDEMPOTENCY_KEY_HEADER } from '../../idempotency.constants.js';
import type { OutboxPublisher, OutgoingMessage, PublishAttempt } from '../outbox-publisher.js';
import { outboxMessages } from '../outbox.messages.js';

/** What `KafkaPublisher` needs of a Kafka producer: a `Producer` of `kafkajs` (`new Kafka({ brokers }).producer()`). */
export interface KafkaProducing {
  connect(): Promise<void>;
  send(record: {
    topic: string;
    messages: { key: string | null; value: string; headers: Record<string, string> }[];
    timeout?: number;
  }): Promise<unknown>;
  disconnect(): Promise<void>;
}

/** `KafkaPublisher`'s options. */
export interface KafkaPublisherOptions {
  /**
   * The producer that sends the messages: `new Kafka({ clientId, brokers }).producer()` of `kafkajs`
   * (an optional peer), with its `acks` left at all in-sync replicas. The publisher connects it at
   * its first message and disconnects it at `close()`.
   */
  readonly producer: KafkaProducing;
}

/** The characters and length Kafka allows in a topic's name ('.' and '..' excepted). */
const TOPIC = /^(?!\.{1,2}$)[\w.-]{1,249}$/;
/** Kafka's errors about the message itself, which no retry can fix (a retriable error, or one of the cluster's, is retried). */
const REFUSED_BY_KAFKA = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_TOPIC_EXCEPTION', 'INVALID_RECORD']);

/**
 * Publishes outbox messages to Kafka through a `kafkajs` producer: the message's `address` is the
 * topic, its payload the value, its headers the record's headers, and its id the `Idempotency-Key`
 * header (Kafka records carry no id of their own: key the consumers' handlers by that header). The
 * ordering key is the record's key, so that Kafka keeps a key's messages in one partition, in the
 * order the relay sends them; a message without one has a null key and goes to any partition. A
 * publish resolves when the partition's leader acknowledged it (the producer's `acks`), and waits
 * for that at most the relay's `publishTimeout`.
 *
 * Kafka keeps every copy of a message the relay sent twice (after a relay died before it marked
 * it): each carries the same id, and the consumer drops the second. `kafkajs` retries a failed send
 * by itself, which may send a message after the relay stopped waiting for it, beside its retry:
 * the same id again. What Kafka refuses for good (a message too large, a topic it cannot have)
 * rejects with `IdempotencyPublishRefusedError`, parked as a dead letter at once.
 *
 * Nest's Kafka transport takes a message's pattern from its topic: `refuse()` answers messages
 * with a `pattern`, a topic name Kafka does not allow, and a header named as the id's.
 *
 * @example
 * ```ts
 * const kafka = new Kafka({ clientId: 'orders', brokers: ['kafka:9092'] });
 * outbox: { publishers: { kafka: new KafkaPublisher({ producer: kafka.producer() }) } }
 * ```
 */
export class KafkaPublisher implements OutboxPublisher {
  private connecting: Promise<void> | undefined;

  constructor(private readonly options: KafkaPublisherOptions) {}

  refuse(message: OutgoingMessage): string | undefined {
    if (message.pattern !== undefined) {
      return outboxMessages.kafkaPattern();
    }
    if (!TOPIC.test(message.address)) {
      return outboxMessages.kafkaTopic(message.address);
    }
    if (IDEMPOTENCY_KEY_HEADER in message.headers) {
      return outboxMessages.kafkaIdHeader(IDEMPOTENCY_KEY_HEADER);
    }
    return undefined;
  }

  async publish(message: OutgoingMessage, attempt?: PublishAttempt): Promise<void> {
    const reason = this.refuse(message);
    if (reason !== undefined) {
      throw new IdempotencyPublishRefusedError(reason);
    }
    await (this.connecting ??= this.connect());
    // Connecting may outlast the relay's wait: a message that has not left by then is not sent.
    attempt?.signal.throwIfAborted();
    try {
      await this.options.producer.send({
        topic: message.address,
        messages: [{ key: message.orderingKey ?? null, value: message.payload, headers: { ...message.headers, [IDEMPOTENCY_KEY_HEADER]: message.id } }],
        ...(attempt === undefined ? {} : { timeout: attempt.timeoutMs }),
      });
    } catch (error) {
      const refusal = kafkaRefusal(error);
      throw refusal === undefined ? error : new IdempotencyPublishRefusedError(outboxMessages.kafkaRefused(message.address, refusal), { cause: error });
    }
  }

  async close(): Promise<void> {
    const connecting = this.connecting;
    this.connecting = undefined;
    if (connecting !== undefined) {
      await this.options.producer.disconnect();
    }
  }

  private async connect(): Promise<void> {
    try {
      await this.options.producer.connect();
    } catch (error) {
      // The next message connects again.
      this.connecting = undefined;
      throw error;
    }
  }
}

/** The type of the Kafka error about the message that `error` is or wraps (kafkajs wraps a protocol error in a non-retriable one); undefined for any other. */
function kafkaRefusal(error: unknown): string | undefined {
  for (let cause = error as { type?: unknown; cause?: unknown } | undefined; cause !== undefined && cause !== null; cause = cause.cause as typeof cause) {
    if (typeof cause.type === 'string' && REFUSED_BY_KAFKA.has(cause.type)) {
      return cause.type;
    }
  }
  return undefined;
}
