import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { NatsJetStreamServer, type ServerConsumerOptions } from '@nestjs-plugins/nestjs-nats-jetstream-transport';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  CreateProcessedMessagesFunctions1796256000000,
  CreateProcessedMessagesTable1764633600000,
  IdempotencyModule,
  UpgradeProcessedMessagesTable1796342400000,
} from 'nestjs-idempotent-consumer';
import { JETSTREAM_STREAM, JetStreamFixtureModule } from './jetstream-fixture.module.js';

/**
 * An application with JetStream handlers on a durable consumer of the plugin, as a process of its own:
 * the plugin is CommonJS on top of the ESM-only Nest 12, which Node loads and Jest's ESM mode
 * does not, and a test can SIGKILL it mid-handler. The consumer's settings (and, with
 * STREAM_SUBJECTS, a `streamConfig` for the suite's stream) come from the environment, so a test
 * can also start it misconfigured.
 */
const env = process.env;
const consumerOptions: Partial<ServerConsumerOptions> = {
  durable: env.DURABLE,
  deliverTo: env.DELIVER_TO ?? env.DURABLE,
  deliverPolicy: 'New',
  ackWait: Number(env.ACK_WAIT_MS ?? 30_000),
  maxAckPending: 1_000,
  ...(env.MANUAL_ACK === 'false' ? {} : { manualAck: true }),
  ackPolicy: (env.ACK_POLICY ?? 'Explicit') as ServerConsumerOptions['ackPolicy'],
};
const app = await NestFactory.create(
  {
    module: class JetStreamAppModule {},
    imports: [
      TypeOrmModule.forRoot({
        type: 'postgres',
        url: env.DATABASE_URL,
        migrations: [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000],
        migrationsRun: true,
      }),
      IdempotencyModule.forRoot({ retention: '7d', purge: { interval: false } }),
      JetStreamFixtureModule,
    ],
  },
  { logger: ['log', 'warn', 'error'] },
);
app.connectMicroservice({
  strategy: new NatsJetStreamServer({
    connectionOptions: { servers: env.NATS_URL, name: `jetstream-e2e-${env.DURABLE}` },
    consumerOptions,
    ...(env.STREAM_SUBJECTS ? { streamConfig: { name: JETSTREAM_STREAM, subjects: env.STREAM_SUBJECTS.split(',') } } : {}),
  }),
});
await app.startAllMicroservices();
await app.listen(Number(env.PORT), '127.0.0.1');
