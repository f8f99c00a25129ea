// The bench app as a NATS JetStream consumer (`@nestjs-plugins/nestjs-nats-jetstream-transport`), a
// child process of the runner: `fork()`ed with BENCH_DATABASE_URL, BENCH_NATS_URL and
// BENCH_VARIANT, it consumes its variant's subject through the durable consumer the runner names
// over IPC until told to pause. It serves no HTTP, and Nest's logger is off.
import 'reflect-metadata';
import type { INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NatsJetStreamServer } from '@nestjs-plugins/nestjs-nats-jetstream-transport';
import { BenchAppModule, PREFETCH } from './bench-app.module.js';
import { BenchJetStreamModule } from './bench-jetstream.controllers.js';
import { answerRunner, type TransportArm } from './consumer-commands.js';
import { connectRedisLeaseStore } from './redis-lease-store.js';

async function bootstrap(): Promise<void> {
  const { BENCH_DATABASE_URL: databaseUrl, BENCH_NATS_URL: natsUrl, BENCH_VARIANT: variant } = process.env;
  if (!databaseUrl || !natsUrl || !variant) {
    throw new Error('the bench JetStream consumer is started by the bench runner (npm run bench), not by hand');
  }
  const redis = await connectRedisLeaseStore();
  const consumers = BenchJetStreamModule.register(variant as TransportArm);
  const app = await NestFactory.create(BenchAppModule.register(databaseUrl, redis.store, { consumers }), { logger: false });
  await app.init();
  let consumer: INestMicroservice | undefined;
  answerRunner({
    consume: async (durable) => {
      consumer = app.connectMicroservice({
        strategy: new NatsJetStreamServer({
          connectionOptions: { servers: natsUrl, name: `idem-bench-${variant}` },
          // As many unacked deliveries as the RabbitMQ consumer's prefetch: one per pool connection.
          consumerOptions: { durable, deliverTo: durable, deliverPolicy: 'All', manualAck: true, ackPolicy: 'Explicit', ackWait: 30_000, maxAckPending: PREFETCH },
        }),
      });
      await consumer.listen();
    },
    pause: async () => {
      // The transport only (it drains its connection): closing the microservice would run the app's shutdown hooks.
      await consumer?.getTransportServer().close();
      consumer = undefined;
    },
    close: () => app.close().then(redis.close),
  });
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
