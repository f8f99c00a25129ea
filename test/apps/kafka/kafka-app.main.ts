import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { createRequire } from 'node:module';
import { type MicroserviceOptions, Transport } from '@nestjs/microservices';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  CreateKafkaOffsetsTable1796515200000,
  CreateProcessedMessagesFunctions1796256000000,
  CreateProcessedMessagesTable1764633600000,
  IdempotencyModule,
  UpgradeProcessedMessagesTable1796342400000,
} from 'nestjs-idempotent-consumer';
import { KafkaFixtureModule } from './kafka-fixture.module.js';

/**
 * An application with Kafka handlers (Nest's ServerKafka, kafkajs) as a process of its own, so that
 * a test can SIGKILL it mid-handler. From the environment: the broker (KAFKA_BROKER), the group
 * (GROUP), AUTO_COMMIT=default to leave kafkajs's autoCommit as it is (the boot check refuses it),
 * KILL_BEFORE_OFFSET_COMMIT=true to die (SIGKILL) when the module commits an offset: after the
 * claim's commit, before the offset's, and KAFKA_OFFSETS=true for `kafkaOffsets: true` with its
 * migration (KAFKA_OFFSETS=without-table: the option without the migration, which the module refuses).
 */
const env = process.env;

// librdkafka 2.0.2's mock cluster ends a group's sync once the leader's SyncGroup brings every
// member's assignment, and answers a follower's SyncGroup that comes after it with INVALID_REQUEST,
// which kafkajs takes for fatal: its consumer crashes and never restarts. A real broker answers
// that follower its assignment. Test-only: kafkajs restarts the consumer on it, as on a retriable error.
const kafkajsErrors = createRequire(import.meta.url)('kafkajs/src/protocol/error.js') as { errorCodes: { code: number; retriable: boolean }[] };
kafkajsErrors.errorCodes.find(({ code }) => code === 42)!.retriable = true;
const app = await NestFactory.create(
  {
    module: class KafkaAppModule {},
    imports: [
      TypeOrmModule.forRoot({
        type: 'postgres',
        url: env.DATABASE_URL,
        migrations: [
          CreateProcessedMessagesTable1764633600000,
          CreateProcessedMessagesFunctions1796256000000,
          UpgradeProcessedMessagesTable1796342400000,
          ...(env.KAFKA_OFFSETS === 'true' ? [CreateKafkaOffsetsTable1796515200000] : []),
        ],
        migrationsRun: true,
      }),
      IdempotencyModule.forRoot({ retention: '7d', purge: { interval: false }, kafkaOffsets: env.KAFKA_OFFSETS !== undefined }),
      KafkaFixtureModule,
    ],
  },
  { logger: ['log', 'warn', 'error'] },
);
const server = app.connectMicroservice<MicroserviceOptions>({
  transport: Transport.KAFKA,
  options: {
    client: { clientId: 'kafka-e2e', brokers: [env.KAFKA_BROKER!], retry: { initialRetryTime: 100, retries: 8 } },
    consumer: { groupId: env.GROUP ?? 'kafka-e2e', sessionTimeout: 6_000, heartbeatInterval: 500, rebalanceTimeout: 6_000 },
    subscribe: { fromBeginning: true },
    run: env.AUTO_COMMIT === 'default' ? { partitionsConsumedConcurrently: 2 } : { autoCommit: false, partitionsConsumedConcurrently: 2 },
  },
});
// SIGTERM closes the app: the consumer leaves its group, whose partitions go to the other members at once.
app.enableShutdownHooks();
// Ready once it listens: the module's checks ran (a refused server ends the process here), and the
// consumer, which reads each partition from its beginning, reads what a test publishes meanwhile.
await app.listen(Number(env.PORT), '127.0.0.1');
await app.startAllMicroservices();
if (env.KILL_BEFORE_OFFSET_COMMIT === 'true') {
  const [, consumer] = server.unwrap<[unknown, { commitOffsets: unknown }]>();
  consumer.commitOffsets = () => process.kill(process.pid, 'SIGKILL');
}
