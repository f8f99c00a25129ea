import amqplib from 'amqplib';

/** The RabbitMQ a bench run uses: `RABBITMQ_URL`, else the local default. */
export const RABBITMQ_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** How long the broker keeps a run's queue once unused (no consumer, not redeclared): a run that died leaves nothing behind for long. */
const UNUSED_QUEUE_EXPIRY_MS = 10 * 60_000;

/**
 * A message: its AMQP `messageId`, and the event. With a `pattern`, the body is `{ pattern, data }`
 * as Nest's RMQ transport reads it; without, the body is `data` alone (golevelup's subscribers).
 */
export interface BenchMessage {
  readonly messageId: string;
  readonly pattern?: string;
  readonly data: unknown;
}

/** The runner's connection to RabbitMQ: it fills the queues the bench consumers read, and looks into them. */
export interface BenchBroker {
  readonly url: string;
  /** Declares a queue of this run: not durable, so it holds transient messages in memory. */
  declareQueue(queue: string): Promise<void>;
  /** Publishes `messages` to `queue` as transient messages and waits until the broker has confirmed every one. */
  publish(queue: string, messages: readonly BenchMessage[]): Promise<void>;
  /** The messages ready in `queue` (not counting those delivered and not yet acked). */
  readyMessages(queue: string): Promise<number>;
  deleteQueue(queue: string): Promise<void>;
  close(): Promise<void>;
}

/** Connects to the broker at `url`; rejects when it does not answer. */
export async function openBenchBroker(url = RABBITMQ_URL): Promise<BenchBroker> {
  const connection = await amqplib.connect(url);
  try {
    const channel = await connection.createConfirmChannel();
    return {
      url,
      declareQueue: async (queue) => {
        await channel.assertQueue(queue, { durable: false, arguments: { 'x-expires': UNUSED_QUEUE_EXPIRY_MS } });
      },
      publish: async (queue, messages) => {
        for (const { messageId, pattern, data } of messages) {
          const body = pattern === undefined ? data : { pattern, data };
          channel.sendToQueue(queue, Buffer.from(JSON.stringify(body)), { messageId, persistent: false });
        }
        await channel.waitForConfirms();
      },
      readyMessages: async (queue) => (await channel.checkQueue(queue)).messageCount,
      deleteQueue: async (queue) => {
        await channel.deleteQueue(queue);
      },
      close: () => connection.close(),
    };
  } catch (error) {
    await connection.close();
    throw error;
  }
}
