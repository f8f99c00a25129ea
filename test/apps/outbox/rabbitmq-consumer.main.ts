import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { type RmqOptions, Transport } from '@nestjs/microservices';
import { creditsConsumerModule } from './granted-credits.js';
import { ADDRESS, CREDIT_PATTERN, env, storeModules } from './outbox-app.js';

/**
 * The downstream service on RabbitMQ: a Nest RMQ microservice on the producer's queue, acking by
 * hand, whose idempotent handler (keyed by the AMQP messageId, the outbox message's id) grants
 * each credit once. A process of its own, so that a test can SIGKILL it mid-handler.
 */
const app = await NestFactory.create({ module: class RabbitMqConsumerApp {}, imports: [...storeModules(), creditsConsumerModule(CREDIT_PATTERN)] }, { logger: ['log', 'warn', 'error'] });
app.connectMicroservice<RmqOptions>({
  transport: Transport.RMQ,
  options: { urls: [env.RABBITMQ_URL!], queue: ADDRESS, noAck: false, prefetchCount: 20, queueOptions: { durable: true } },
});
await app.startAllMicroservices();
await app.listen(Number(env.PORT), '127.0.0.1');
