import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AsyncLocalStorage } from 'node:async_hooks';
import { IdempotencyAdmin } from './admin/idempotency-admin.service.js';
import { ClaimingService } from './claiming/claiming.service.js';
import { CLAIM_STORAGE, IdempotencyContext } from './context/idempotency.context.js';
import { IdempotencyMetadataAccessor } from './decorators/idempotency-metadata.accessor.js';
import { IdempotencyExplorer } from './discovery/idempotency.explorer.js';
import { StoredConsumers } from './discovery/stored-consumers.js';
import { IdempotencyHealthIndicator } from './health/idempotency.health.js';
import { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } from './idempotency.module-definition.js';
import { type IdempotencyModuleOptions, RESOLVED_OPTIONS, type ResolvedIdempotencyOptions, resolveModuleOptions } from './idempotency.options.js';
import { DataSourceJoin } from './joining/data-source-join.js';
import { LeaseClaimingService } from './leasing/lease-claiming.service.js';
import { LeaseStores } from './leasing/lease-stores.js';
import { IdempotencyMetricsService } from './metrics/idempotency-metrics.service.js';
import { PrometheusExporter } from './metrics/prometheus.exporter.js';
import { IdempotencyPurgeService } from './purge/idempotency-purge.service.js';
import { PurgeScheduler } from './purge/purge.scheduler.js';
import { ResponseRecording } from './recording/response-recording.js';
import { ReplayCache } from './replay-cache/replay-cache.js';
import { StoreSchemaCheck } from './schema/store-schema.check.js';
import { BullmqProcessorCheck } from './transports/bullmq/bullmq-processor.check.js';
import { GolevelupRabbitmqPackage } from './transports/golevelup-rabbitmq/golevelup-rabbitmq.package.js';
import { GolevelupRabbitTransport } from './transports/golevelup-rabbitmq/golevelup-rabbitmq.transport.js';
import { GraphqlResolverCheck } from './transports/graphql/graphql-resolver.check.js';
import { GraphqlTransport } from './transports/graphql/graphql.transport.js';
import { GolevelupSubscriptionCheck } from './transports/golevelup-rabbitmq/golevelup-subscription.check.js';
import { HttpDelivery } from './transports/http/http-delivery.js';
import { MessageDelivery } from './transports/message-delivery.js';
import { MESSAGE_TRANSPORTS, type MessageTransport } from './transports/message-transport.js';
import { nestMicroservicesProvider } from './transports/nest-microservices.js';
import { JetStreamConsumerCheck } from './transports/nats-jetstream/jetstream-consumer.check.js';
import { NatsJetStreamTransport } from './transports/nats-jetstream/nats-jetstream.transport.js';
import { NestNatsTransport } from './transports/nest-nats/nest-nats.transport.js';
import { NestRmqTransport } from './transports/nest-rmq/nest-rmq.transport.js';
import { RmqAcknowledgements } from './transports/nest-rmq/rmq-acknowledgements.js';
import { RmqConsumerCheck } from './transports/nest-rmq/rmq-consumer.check.js';
import { NestRpcTransport } from './transports/nest-rpc.transport.js';
import { ProviderCallEntries } from './transports/provider-call.entries.js';
import { SqsConsumerCheck } from './transports/sqs/sqs-consumer.check.js';
import { SqsConsumers } from './transports/sqs/sqs-consumers.js';
import { SqsTransport } from './transports/sqs/sqs.transport.js';
import { IdempotencyTracing } from './tracing/idempotency-tracing.js';
import { StoreSampler } from './metrics/store.sampler.js';

/**
 * Exactly-once handlers on PostgreSQL through TypeORM. Import it once, after `TypeOrmModule`;
 * it is global unless `isGlobal: false`. At bootstrap it refuses to start (`IdempotencySchemaError`)
 * when the store lacks a table, column or function its handlers use.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     TypeOrmModule.forRoot({ type: 'postgres', url, migrations: [
 *       CreateProcessedMessagesTable1764633600000,
 *       CreateProcessedMessagesFunctions1796256000000,
 *       UpgradeProcessedMessagesTable1796342400000,
 *     ] }),
 *     IdempotencyModule.forRoot({ retention: '7d', senders: { payments: { redeliveryHorizon: '3d' } } }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: RESOLVED_OPTIONS,
      inject: [MODULE_OPTIONS_TOKEN],
      useFactory: (options: IdempotencyModuleOptions) => resolveModuleOptions(options),
    },
    { provide: CLAIM_STORAGE, useFactory: () => new AsyncLocalStorage() },
    IdempotencyContext,
    IdempotencyMetadataAccessor,
    IdempotencyExplorer,
    StoreSchemaCheck,
    StoredConsumers,
    DataSourceJoin,
    {
      provide: ReplayCache,
      inject: [RESOLVED_OPTIONS],
      useFactory: (options: ResolvedIdempotencyOptions) => new ReplayCache(options.replayCache),
    },
    ClaimingService,
    LeaseStores,
    LeaseClaimingService,
    ResponseRecording,
    HttpDelivery,
    nestMicroservicesProvider,
    RmqAcknowledgements,
    RmqConsumerCheck,
    NestRmqTransport,
    NestNatsTransport,
    NatsJetStreamTransport,
    JetStreamConsumerCheck,
    NestRpcTransport,
    GolevelupRabbitmqPackage,
    GolevelupRabbitTransport,
    GolevelupSubscriptionCheck,
    GraphqlTransport,
    GraphqlResolverCheck,
    {
      provide: MESSAGE_TRANSPORTS,
      inject: [NestRmqTransport, NestNatsTransport, NatsJetStreamTransport, GolevelupRabbitTransport, GraphqlTransport, NestRpcTransport],
      // The catch-all of Nest's other transports last.
      useFactory: (...transports: MessageTransport[]) => transports,
    },
    MessageDelivery,
    ProviderCallEntries,
    BullmqProcessorCheck,
    SqsConsumers,
    SqsTransport,
    SqsConsumerCheck,
    IdempotencyMetricsService,
    PrometheusExporter,
    StoreSampler,
    IdempotencyTracing,
    IdempotencyPurgeService,
    PurgeScheduler,
    IdempotencyHealthIndicator,
    IdempotencyAdmin,
  ],
  // HttpDelivery and MessageDelivery: what @IdempotentHandler()'s interceptor needs in the controllers' modules.
  exports: [IdempotencyContext, IdempotencyAdmin, IdempotencyMetricsService, IdempotencyPurgeService, IdempotencyHealthIndicator, HttpDelivery, MessageDelivery],
})
export class IdempotencyModule extends ConfigurableModuleClass {}
