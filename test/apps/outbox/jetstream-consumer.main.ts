import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { NatsJetStreamServer } from '@nestjs-plugins/nestjs-nats-jetstream-transport';
import { creditsConsumerModule } from './granted-credits.js';
import { ADDRESS, env, storeModules } from './outbox-app.js';

/**
 * The downstream service on NATS JetStream: a durable consumer (DURABLE) of the plugin, acking by
 * hand, whose idempotent handler (keyed by the Nats-Msg-Id header, the outbox message's id)
 * grants each credit once; the subject is the producer's address. A process of its own (the
 * plugin is CommonJS, which Jest's ESM mode does not load), so that a test can SIGKILL it.
 */
const app = await NestFactory.create({ module: class JetStreamConsumerApp {}, imports: [...storeModules(), creditsConsumerModule(ADDRESS)] }, { logger: ['log', 'warn', 'error'] });
app.connectMicroservice({
  strategy: new NatsJetStreamServer({
    connectionOptions: { servers: env.NATS_URL, name: `outbox-e2e-${env.DURABLE}` },
    consumerOptions: {
      durable: env.DURABLE,
      deliverTo: env.DURABLE,
      deliverPolicy: 'All',
      ackWait: Number(env.ACK_WAIT_MS ?? 30_000),
      maxAckPending: 100,
      manualAck: true,
      ackPolicy: 'Explicit',
    },
  }),
});
await app.startAllMicroservices();
await app.listen(Number(env.PORT), '127.0.0.1');
