import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { type KafkaOptions, Transport } from '@nestjs/microservices';
import { creditsConsumerModule } from './granted-credits.js';
import { ADDRESS, env, storeModules } from './outbox-app.js';

/**
 * The downstream service on Kafka: Nest's Kafka server (kafkajs) in the group DURABLE (Nest names
 * it `<DURABLE>-server`) on the producer's topic, reading from the beginning, whose idempotent
 * handler (keyed by the `Idempotency-Key` header, the outbox message's id) grants each credit
 * once; the module commits each offset after the claim's commit. A process of its own, so that a
 * test can SIGKILL it mid-handler.
 */
const app = await NestFactory.create({ module: class KafkaConsumerApp {}, imports: [...storeModules(), creditsConsumerModule(ADDRESS)] }, { logger: ['log', 'warn', 'error'] });
app.connectMicroservice<KafkaOptions>({
  transport: Transport.KAFKA,
  options: {
    client: { clientId: `outbox-e2e-${env.DURABLE}`, brokers: [env.KAFKA_BROKERS!] },
    // A SIGKILLed member is out of the group after 6 s, not the default 30 s, so that its partitions pass to the restarted one.
    consumer: { groupId: env.DURABLE!, sessionTimeout: 6_000, heartbeatInterval: 1_000, maxWaitTimeInMs: 100 },
    subscribe: { fromBeginning: true },
    // The auto-created topic's four partitions, each handled one record at a time, in its order.
    run: { autoCommit: false, partitionsConsumedConcurrently: 4 },
  },
});
app.enableShutdownHooks();
await app.startAllMicroservices();
await app.listen(Number(env.PORT), '127.0.0.1');
