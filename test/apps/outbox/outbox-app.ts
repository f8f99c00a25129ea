import { Controller, Get, Module, type DynamicModule, type Type } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { type ISocketFactory, Kafka, logLevel } from 'kafkajs';
import { connect as connectTcp } from 'node:net';
import {
  CreateOutboxMessagesTable1796428800000,
  CreateOutboxMessagesTableMariaDb1796688000000,
  CreateProcessedMessagesFunctions1796256000000,
  CreateProcessedMessagesTable1764633600000,
  CreateProcessedMessagesTableMariaDb1796601600000,
  IdempotencyMetricsService,
  IdempotencyModule,
  JetStreamPublisher,
  KafkaPublisher,
  type OutboxOptions,
  type OutboxPublisher,
  type OutboxRelayOptions,
  RabbitMqPublisher,
  UpgradeProcessedMessagesTable1796342400000,
} from 'nestjs-idempotent-consumer';

/**
 * What the outbox suite's processes share: the environment they are started with, the database
 * (the store's migrations, the outbox's among them), the publisher of the run's transport and the
 * `GET /ping` and `GET /stats` a test reads them by.
 *
 * TRANSPORT: 'rabbitmq', 'jetstream' or 'kafka'; OUTBOX_ADDRESS: the queue (RabbitMQ), the subject
 * (JetStream) or the topic (Kafka) credits are published to and consumed from; RABBITMQ_URL /
 * NATS_URL: the broker, or a proxy in front of it; KAFKA_BROKERS: the Kafka broker's `host:port`,
 * and KAFKA_PROXY_PORT: a proxy in front of it on 127.0.0.1, which every connection of the Kafka
 * client goes to (it connects to the brokers the cluster's metadata names, not to the one given).
 * DATABASE: 'postgres' (the default) or 'mariadb', the database DATABASE_URL names, through TypeORM.
 */
export type OutboxTransport = 'rabbitmq' | 'jetstream' | 'kafka';

export const env = process.env;
export const ON_MARIADB = env.DATABASE === 'mariadb';
/** The statement `sql` with its `$1`, `$2`... placeholders as the database's driver writes them (`?` on MariaDB). */
export const placeholders = (sql: string) => (ON_MARIADB ? sql.replace(/\$\d+/g, '?') : sql);
export const TRANSPORT = (env.TRANSPORT ?? 'rabbitmq') as OutboxTransport;
export const ADDRESS = env.OUTBOX_ADDRESS ?? 'outbox-credits';
/** The Nest pattern of a credit on RabbitMQ; a JetStream consumer's pattern is its subject, a Kafka one's its topic. */
export const CREDIT_PATTERN = 'credit.granted';

/** A credit as the producer announces it. */
export interface GrantedCredit {
  readonly account: string;
  readonly cents: number;
  readonly creditId: string;
}

/** The relay's settings from RELAY_* variables, the module's defaults otherwise. */
function relayOptions(): OutboxRelayOptions {
  return {
    ...(env.RELAY_BATCH_SIZE ? { batchSize: Number(env.RELAY_BATCH_SIZE) } : {}),
    ...(env.RELAY_PUBLISH_TIMEOUT ? { publishTimeout: env.RELAY_PUBLISH_TIMEOUT as OutboxRelayOptions['publishTimeout'] } : {}),
    ...(env.RELAY_RETRY_DELAY ? { retryDelay: env.RELAY_RETRY_DELAY as OutboxRelayOptions['retryDelay'] } : {}),
    ...(env.RELAY_POLL_INTERVAL ? { pollInterval: env.RELAY_POLL_INTERVAL as OutboxRelayOptions['pollInterval'] } : {}),
  };
}

/** The publisher of the run's transport; JetStream's waits for the stream's acknowledgement as long as the relay may. */
async function publisher(): Promise<OutboxPublisher> {
  if (TRANSPORT === 'rabbitmq') {
    return new RabbitMqPublisher({ urls: [env.RABBITMQ_URL!] });
  }
  if (TRANSPORT === 'kafka') {
    const viaProxy: ISocketFactory = ({ onConnect }) => connectTcp({ host: '127.0.0.1', port: Number(env.KAFKA_PROXY_PORT) }, onConnect);
    const kafka = new Kafka({
      clientId: `outbox-e2e-${process.pid}`,
      brokers: [env.KAFKA_BROKERS!],
      logLevel: logLevel.WARN,
      ...(env.KAFKA_PROXY_PORT ? { socketFactory: viaProxy } : {}),
    });
    return new KafkaPublisher({ producer: kafka.producer() });
  }
  const nats = await connect({ servers: env.NATS_URL, maxReconnectAttempts: -1, reconnectTimeWait: 250, name: `outbox-e2e-${process.pid}` });
  const timeout = env.RELAY_PUBLISH_TIMEOUT_MS ? Number(env.RELAY_PUBLISH_TIMEOUT_MS) : 10_000;
  return new JetStreamPublisher({ jetstream: jetstream(nats, { timeout }) });
}

/** The outbox option: this process's relay when `relay` is true, none (another process relays) otherwise. */
export async function outboxOptions(relay: boolean): Promise<OutboxOptions> {
  return { publishers: { [TRANSPORT]: await publisher() }, relay: relay ? relayOptions() : false };
}

/** The database and the module, with the outbox when given. */
/** Readiness, and what this process counted: deliveries by outcome (duplicates among them) and what its relay published. */
@Controller()
class StatsController {
  constructor(private readonly metrics: IdempotencyMetricsService) {}

  @Get('ping')
  ping() {
    return 'pong';
  }

  @Get('stats')
  stats() {
    return { deliveries: this.metrics.deliveries(), outbox: this.metrics.outbox() };
  }
}

@Module({ controllers: [StatsController] })
class StatsModule {}

export function storeModules(outbox?: OutboxOptions): (DynamicModule | Type)[] {
  return [
    TypeOrmModule.forRoot(
      ON_MARIADB
        ? {
            type: 'mariadb',
            url: env.DATABASE_URL,
            migrations: [CreateProcessedMessagesTableMariaDb1796601600000, CreateOutboxMessagesTableMariaDb1796688000000],
            migrationsRun: true,
            multipleStatements: true,
            extra: { connectionLimit: Number(env.POOL_SIZE ?? 10) },
          }
        : {
            type: 'postgres',
            url: env.DATABASE_URL,
            migrations: [
              CreateProcessedMessagesTable1764633600000,
              CreateProcessedMessagesFunctions1796256000000,
              UpgradeProcessedMessagesTable1796342400000,
              CreateOutboxMessagesTable1796428800000,
            ],
            migrationsRun: true,
            extra: { max: Number(env.POOL_SIZE ?? 10) },
          },
    ),
    IdempotencyModule.forRoot({ retention: '7d', purge: { interval: false }, ...(outbox ? { outbox } : {}) }),
    StatsModule,
  ];
}
