import amqplib from 'amqplib';
import { connect as connectNats } from '@nats-io/transport-node';
import type { INestApplication } from '@nestjs/common';
import { type NatsOptions, Transport } from '@nestjs/microservices';
import { createClient } from 'redis';

export const RABBITMQ_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const NATS_URL = process.env.NATS_URL ?? '127.0.0.1:4222';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Whether the broker answers. When it does not, the suite says so loudly and its tests are
 * skipped (they show as skipped in the summary); with CI=true a missing broker fails the run.
 */
async function brokerAvailable(name: string, url: string, probe: () => Promise<void>): Promise<boolean> {
  try {
    await probe();
    return true;
  } catch (error) {
    const reason = `${name} at ${url} did not answer (${(error as Error).message})`;
    if (process.env.CI === 'true') {
      throw new Error(`${reason}; CI=true requires it`, { cause: error });
    }
    console.warn(`\n*** SKIPPING the ${name} suite: ${reason}. Start ${name} or set CI=true to make this a failure. ***\n`);
    return false;
  }
}

export const rabbitMqAvailable = () =>
  brokerAvailable('RabbitMQ', RABBITMQ_URL, async () => {
    const connection = await amqplib.connect(RABBITMQ_URL);
    await connection.close();
  });

export const natsAvailable = () =>
  brokerAvailable('NATS', NATS_URL, async () => {
    const connection = await connectNats({ servers: NATS_URL, timeout: 2_000 });
    await connection.close();
  });

/** Connects to Redis at `REDIS_URL` and disconnects; rejects when it does not answer. */
export async function probeRedis(): Promise<void> {
  const client = createClient({ url: REDIS_URL, socket: { reconnectStrategy: false, connectTimeout: 2_000 } });
  await client.connect();
  await client.close();
}

export const redisAvailable = () => brokerAvailable('Redis', REDIS_URL, probeRedis);

/** Makes `app` a consumer of NATS through Nest's transport (request-reply and events), started. */
export async function consumeNats(app: INestApplication): Promise<void> {
  app.connectMicroservice<NatsOptions>({ transport: Transport.NATS, options: { servers: [NATS_URL] } });
  await app.startAllMicroservices();
}
