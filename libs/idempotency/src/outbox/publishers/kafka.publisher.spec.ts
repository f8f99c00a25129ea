import { IdempotencyPublishRefusedError } from '../../errors/idempotency.errors.js';
import type { OutgoingMessage, PublishAttempt } from '../outbox-publisher.js';
import { type KafkaProducing, KafkaPublisher } from './kafka.publisher.js';

/** A producer whose sends fail as kafkajs reports a broker's answer: a protocol error wrapped in a non-retriable one, or a retriable one as it is. */
function failingProducer(error: Error): KafkaProducing & { sent: number } {
  return {
    sent: 0,
    connect: async () => undefined,
    async send() {
      this.sent++;
      throw error;
    },
    disconnect: async () => undefined,
  };
}

const message: OutgoingMessage = { id: 'm-1', address: 'orders', pattern: undefined, headers: {}, payload: '{}', orderingKey: undefined };
const attempt = (signal = new AbortController().signal): PublishAttempt => ({ attempt: 1, lastError: undefined, timeoutMs: 1_000, signal });

/** The librdkafka mock the e2e suites run takes every message: what a real broker refuses for good is checked here, with kafkajs's error shapes. */
describe('KafkaPublisher', () => {
  it('rejects with IdempotencyPublishRefusedError what Kafka refused for good (a message too large, wrapped by kafkajs), naming the topic and the error', async () => {
    const protocol = Object.assign(new Error('The request included a message larger than the max message size the server will accept'), { type: 'MESSAGE_TOO_LARGE', retriable: false });
    const wrapped = Object.assign(new Error(protocol.message), { name: 'KafkaJSNonRetriableError', cause: protocol });
    const publishing = new KafkaPublisher({ producer: failingProducer(wrapped) }).publish(message, attempt());
    await expect(publishing).rejects.toBeInstanceOf(IdempotencyPublishRefusedError);
    await expect(publishing).rejects.toThrow("Kafka refused the message to the topic 'orders' for good (MESSAGE_TOO_LARGE)");
  });

  it('rejects with the error itself, retried by the relay, what may pass later (a leader moving, retries exhausted)', async () => {
    const protocol = Object.assign(new Error('There is no leader for this topic-partition'), { type: 'LEADER_NOT_AVAILABLE', retriable: true });
    const exhausted = Object.assign(new Error(protocol.message), { name: 'KafkaJSNumberOfRetriesExceeded', cause: protocol });
    const publishing = new KafkaPublisher({ producer: failingProducer(exhausted) }).publish(message, attempt());
    await expect(publishing).rejects.toBe(exhausted);
  });

  it('does not send a message whose attempt the relay gave up while the producer was connecting', async () => {
    const producer = failingProducer(new Error('not reached'));
    const abort = new AbortController();
    producer.connect = async () => abort.abort(new Error('no confirmation from the broker within 1000 ms'));
    await expect(new KafkaPublisher({ producer }).publish(message, attempt(abort.signal))).rejects.toThrow('no confirmation');
    expect(producer.sent).toBe(0);
  });
});
