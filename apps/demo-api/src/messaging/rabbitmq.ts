import type { INestApplication } from '@nestjs/common';
import { type RmqOptions, Transport } from '@nestjs/microservices';
import amqplib from 'amqplib';

/** Deliveries handed to one consumer before it acks any: bounds the work lost to a crash. */
const PREFETCH = 10;

/**
 * Consumes `queue` (pattern `credit.grant`) with manual acknowledgement. Messages the module
 * rejects go through the default exchange to `<queue>.dead`, declared here so it exists before
 * the first one is dead-lettered.
 */
export async function consumeCredits(app: INestApplication, url: string, queue: string): Promise<void> {
  const connection = await amqplib.connect(url);
  try {
    const channel = await connection.createChannel();
    await channel.assertQueue(`${queue}.dead`, { durable: true });
  } finally {
    await connection.close();
  }
  app.connectMicroservice<RmqOptions>({
    transport: Transport.RMQ,
    options: {
      urls: [url],
      queue,
      noAck: false,
      prefetchCount: PREFETCH,
      queueOptions: {
        durable: true,
        arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': `${queue}.dead` },
      },
    },
  });
  await app.startAllMicroservices();
}
