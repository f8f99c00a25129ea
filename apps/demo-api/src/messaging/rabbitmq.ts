import type { INestApplication } from '@nestjs/common';
import { type RmqOptions, Transport } from '@nestjs/microservices';
import amqplib from 'amqplib';
import { CREDIT_GRANT_MAX_ATTEMPTS } from '../credits/credit-messages.controller.js';

/** Deliveries handed to one consumer before it acks any: bounds the work lost to a crash. */
const PREFETCH = 10;

/** The RabbitMQ queue types the demo can declare. */
export const CREDIT_QUEUE_TYPES = ['classic', 'quorum'] as const;

/** `classic`: RabbitMQ's single-node queue; `quorum`: the replicated queue that counts deliveries. */
export type CreditQueueType = (typeof CREDIT_QUEUE_TYPES)[number];

/** The queue the demo consumes `credit.grant` from, and how it is declared. */
export interface CreditQueue {
  /** The queue's name; its dead-letter queue is `<name>.dead`. */
  readonly name: string;
  /**
   * The type of the queue and of its dead-letter queue. Quorum queues are always durable, and
   * count each message's returns in its `x-delivery-count` header, from which the module counts
   * the message's failed attempts across consumer processes; on a classic queue each process
   * counts its own.
   */
  readonly type: CreditQueueType;
  /**
   * Quorum queues only: the queue's `x-delivery-limit`, the broker's own end of a redelivery
   * loop. RabbitMQ dead-letters a message returned to the queue more than this many times
   * (delivered limit + 1 times), whether or not a consumer reached a verdict on it, so it also
   * ends a message that kills its consumer every time. The module dead-letters a failing message
   * at its `maxAttempts`-th delivery (counted from `x-delivery-count`, after `maxAttempts - 1`
   * returns); a limit of at least `maxAttempts` leaves that decision to the module, with a
   * delivery to spare, and a lower one is refused.
   * @default CREDIT_GRANT_MAX_ATTEMPTS (5, the `maxAttempts` of the `credit.grant` handler)
   */
  readonly deliveryLimit?: number;
}

/**
 * The queue as the environment sets it: `RABBITMQ_QUEUE` (default `credits`),
 * `RABBITMQ_QUEUE_TYPE` (`classic` or `quorum`, default `classic`) and `RABBITMQ_DELIVERY_LIMIT`
 * (quorum queues only; default and minimum `CREDIT_GRANT_MAX_ATTEMPTS`).
 */
export function creditQueueFromEnvironment(env: NodeJS.ProcessEnv): CreditQueue {
  const type = env.RABBITMQ_QUEUE_TYPE || undefined;
  if (type !== undefined && !(CREDIT_QUEUE_TYPES as readonly string[]).includes(type)) {
    throw new Error(`RABBITMQ_QUEUE_TYPE is '${type}': set it to ${CREDIT_QUEUE_TYPES.map((known) => `'${known}'`).join(' or ')}`);
  }
  const limit = env.RABBITMQ_DELIVERY_LIMIT || undefined;
  return {
    name: env.RABBITMQ_QUEUE || 'credits',
    type: (type as CreditQueueType | undefined) ?? 'classic',
    deliveryLimit: limit === undefined ? undefined : Number(limit),
  };
}

/**
 * Consumes the queue (pattern `credit.grant`) with manual acknowledgement. Messages the module
 * rejects go through the default exchange to `<queue>.dead`, declared here (of the same type) so
 * it exists before the first one is dead-lettered. A quorum queue gets a delivery limit of at
 * least the handler's `maxAttempts`; see {@link CreditQueue.deliveryLimit}.
 */
export async function consumeCredits(app: INestApplication, url: string, queue: CreditQueue): Promise<void> {
  const typeArguments = queueTypeArguments(queue);
  const deadQueue = `${queue.name}.dead`;
  const connection = await amqplib.connect(url);
  try {
    const channel = await connection.createChannel();
    await channel.assertQueue(deadQueue, { durable: true, arguments: queue.type === 'quorum' ? { 'x-queue-type': 'quorum' } : {} });
  } finally {
    await connection.close();
  }
  app.connectMicroservice<RmqOptions>({
    transport: Transport.RMQ,
    options: {
      urls: [url],
      queue: queue.name,
      noAck: false,
      prefetchCount: PREFETCH,
      queueOptions: {
        durable: true,
        arguments: { ...typeArguments, 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': deadQueue },
      },
    },
  });
  await app.startAllMicroservices();
}

/** The declaration arguments of the queue's type: none for a classic queue. */
function queueTypeArguments(queue: CreditQueue): Record<string, unknown> {
  if (queue.type === 'classic') {
    if (queue.deliveryLimit !== undefined) {
      throw new Error(`A delivery limit (RABBITMQ_DELIVERY_LIMIT) needs a quorum queue: set RABBITMQ_QUEUE_TYPE=quorum for queue '${queue.name}'`);
    }
    return {};
  }
  const limit = queue.deliveryLimit ?? CREDIT_GRANT_MAX_ATTEMPTS;
  if (!Number.isInteger(limit) || limit < CREDIT_GRANT_MAX_ATTEMPTS) {
    throw new Error(
      `The delivery limit (RABBITMQ_DELIVERY_LIMIT) of quorum queue '${queue.name}' is ${limit}: ` +
        `make it a whole number of at least ${CREDIT_GRANT_MAX_ATTEMPTS}, the maxAttempts of the credit.grant handler, ` +
        `so that the module's retries, not the broker's limit, end a failing message`,
    );
  }
  return { 'x-queue-type': 'quorum', 'x-delivery-limit': limit };
}
