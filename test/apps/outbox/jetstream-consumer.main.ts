import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { NatsJetStreamServer } from '@nestjs-plugins/nestjs-nats-jetstream-transport';
import { IdempotentHandler } from 'nestjs-idempotent-consumer';
import { GrantedCredits } from './granted-credits.js';
import { ADDRESS, env, type GrantedCredit, storeModules } from './outbox-app.js';

/**
 * The downstream service on NATS JetStream: a durable consumer (DURABLE) of the plugin, acking by
 * hand, whose idempotent handler (keyed by the Nats-Msg-Id header, the outbox message's id)
 * grants each credit once; the subject is the producer's address. A process of its own (the
 * plugin is CommonJS, which Jest's ESM mode does not load), so that a test can SIGKILL it.
 */
@Controller()
class CreditsConsumer {
  constructor(private readonly credits: GrantedCredits) {}

  @EventPattern<string>(ADDRESS)
  @IdempotentHandler()
  grant(@Payload() credit: GrantedCredit) {
    return this.credits.grant(credit);
  }
}

@Module({ controllers: [CreditsConsumer], providers: [GrantedCredits] })
class ConsumerModule {}

const app = await NestFactory.create({ module: class JetStreamConsumerApp {}, imports: [...storeModules(), ConsumerModule] }, { logger: ['log', 'warn', 'error'] });
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
