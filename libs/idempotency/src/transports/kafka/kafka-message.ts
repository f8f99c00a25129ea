import type { Logger } from '@nestjs/common';
import { IDEMPOTENCY_KEY_HEADER } from '../../idempotency.constants.js';
import type { Verdict } from '../message-transport.js';
import { retryDelayMs } from '../transport.constants.js';
import { failureOutcomes, transportMessages } from '../transport.messages.js';
import { kafkaMessages } from './kafka.messages.js';

/** Nest's `Transport.KAFKA`. */
export const KAFKA_TRANSPORT = 6;

/** The transport's name in metrics, traces and logs. */
export const KAFKA_TRANSPORT_NAME = 'kafka';

/**
 * The header a Kafka message's default key is read from: the one the module's outbox publishers
 * and HTTP entry name the idempotency key by.
 */
export const KAFKA_KEY_HEADER = IDEMPOTENCY_KEY_HEADER;

/** The topic a message of `topic` is dead-lettered to. */
export const deadLetterTopicOf = (topic: string) => `${topic}.DLT`;

/** The offset after the delivered record's: where the group reads next once the record is settled. */
export const nextOffsetOf = (delivery: KafkaDelivery) => (BigInt(delivery.getMessage().offset) + 1n).toString();

/** How long a partition waits before it reads a message again whose dead-lettering failed. */
const DEAD_LETTER_RETRY_MS = 1_000;

/** Failed attempts remembered per record; the oldest are forgotten beyond this many. */
const MAX_REMEMBERED_FAILURES = 10_000;

/** What the module reads and calls of Nest's `KafkaContext` (the handler's second argument). */
export interface KafkaDelivery {
  getMessage(): { readonly offset: string; readonly key?: unknown; readonly value: unknown; readonly headers?: Record<string, unknown> };
  getPartition(): number;
  getTopic(): string;
  getConsumer(): KafkaConsumer;
  getProducer(): KafkaProducer;
}

/** What the module calls of a kafkajs consumer. */
export interface KafkaConsumer {
  commitOffsets(offsets: { topic: string; partition: number; offset: string }[]): Promise<void>;
  seek(position: { topic: string; partition: number; offset: string }): void;
  pause(topics: { topic: string; partitions: number[] }[]): void;
  resume(topics: { topic: string; partitions: number[] }[]): void;
}

/** What the module calls of a kafkajs producer. */
interface KafkaProducer {
  send(record: { topic: string; messages: { key?: Buffer | string | null; value: Buffer | string | null; headers: Record<string, Buffer | string> }[] }): Promise<unknown>;
}

/**
 * Settles Kafka records by their verdicts, for one application: an ack commits the offset after
 * the record's; a retry pauses the partition, seeks back to the record and resumes it after the
 * retry delay (doubled with each failure, counted by this process per record); a record that can
 * never succeed, or whose attempts are spent, is produced to `<topic>.DLT` and its offset then
 * committed. A commit the consumer could not make is no failure: the record is read again and
 * answered as a duplicate.
 * @internal
 */
export class KafkaSettlement {
  private readonly failedAttempts = new Map<string, number>();

  /** `offsets`: with `kafkaOffsets: true`, what writes the position in the database before each offset commit. */
  constructor(
    private readonly logger: Logger,
    private readonly offsets?: { write(delivery: KafkaDelivery): Promise<void> },
  ) {}

  /**
   * Settles the record `delivery` carries; resolves once its offset is committed, or its retry is scheduled.
   * `positionInClaim`: the claim's COMMIT wrote the record's position, which an ack then does not write again.
   */
  async settle(delivery: KafkaDelivery, messageId: unknown, verdict: Verdict, positionInClaim = false): Promise<void> {
    const topic = delivery.getTopic();
    const partition = delivery.getPartition();
    const { offset } = delivery.getMessage();
    const position = `${topic}/${partition}/${offset}`;
    if (verdict.kind === 'ack') {
      this.failedAttempts.delete(position);
      return this.commitAfter(delivery, positionInClaim);
    }
    const failed = (outcome: string) => transportMessages.deliveryFailed({ transport: KAFKA_TRANSPORT_NAME, messageId: messageId ?? position, ...verdict, outcome, cause: verdict.reason });
    if (verdict.kind === 'retry') {
      const attempt = this.countFailure(position);
      if (attempt < verdict.maxAttempts) {
        const delayMs = retryDelayMs(verdict, attempt);
        this.logger.warn(failed(failureOutcomes.readAgain(attempt, verdict.maxAttempts, delayMs)));
        this.readAgain(delivery, delayMs);
        return;
      }
      this.logger.error(failed(failureOutcomes.deadLettered(attempt)));
    } else {
      this.logger.error(failed(failureOutcomes.deadLettered()));
    }
    const deadLetterTopic = deadLetterTopicOf(topic);
    try {
      const { key, value, headers = {} } = delivery.getMessage();
      const encodedHeaders = Object.fromEntries(Object.entries(headers).map(([name, header]) => [name, encoded(header) ?? '']));
      await delivery.getProducer().send({ topic: deadLetterTopic, messages: [{ key: encoded(key), value: encoded(value), headers: encodedHeaders }] });
    } catch (error) {
      this.logger.error(kafkaMessages.deadLetterFailed(deadLetterTopic, (error as Error).message));
      this.readAgain(delivery, DEAD_LETTER_RETRY_MS);
      return;
    }
    // Counted until dead-lettered: a record whose dead letter failed is dead-lettered at its next failure.
    this.failedAttempts.delete(position);
    return this.commitAfter(delivery, false);
  }

  /**
   * Commits the offset after the record's: the group's next read starts behind it. With `offsets`,
   * the position is written first unless the claim wrote it (`positionWritten`), so the stored one
   * is never behind Kafka's; nothing is committed when it cannot be written.
   */
  private async commitAfter(delivery: KafkaDelivery, positionWritten: boolean): Promise<void> {
    const topic = delivery.getTopic();
    try {
      if (!positionWritten) {
        await this.offsets?.write(delivery);
      }
      await delivery.getConsumer().commitOffsets([{ topic, partition: delivery.getPartition(), offset: nextOffsetOf(delivery) }]);
    } catch (error) {
      this.logger.warn(transportMessages.settleFailed(topic, (error as Error).message));
    }
  }

  /** Pauses the record's partition and seeks back to the record; the partition resumes after `delayMs`. */
  private readAgain(delivery: KafkaDelivery, delayMs: number): void {
    const consumer = delivery.getConsumer();
    const topic = delivery.getTopic();
    const partitions = [{ topic, partitions: [delivery.getPartition()] }];
    try {
      consumer.pause(partitions);
      consumer.seek({ topic, partition: delivery.getPartition(), offset: delivery.getMessage().offset });
      setTimeout(() => consumer.resume(partitions), delayMs).unref();
    } catch (error) {
      // A consumer that stopped or lost the partition: the group reads the record again from its committed offset.
      this.logger.warn(transportMessages.settleFailed(topic, (error as Error).message));
    }
  }

  private countFailure(position: string): number {
    const counted = (this.failedAttempts.get(position) ?? 0) + 1;
    this.failedAttempts.delete(position);
    this.failedAttempts.set(position, counted);
    if (this.failedAttempts.size > MAX_REMEMBERED_FAILURES) {
      this.failedAttempts.delete(this.failedAttempts.keys().next().value as string);
    }
    return counted;
  }
}

/** A value of a record as Nest's parser decoded it (text, or the JSON it held), encoded again for a producer. */
function encoded(value: unknown): Buffer | string | null {
  if (value === null || value === undefined) {
    return null;
  }
  return Buffer.isBuffer(value) || typeof value === 'string' ? value : JSON.stringify(value);
}
