import { outboxTableProvider } from './outbox/outbox.options.js';
import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AsyncLocalStorage } from 'node:async_hooks';
import { IdempotencyAdmin } from './admin/idempotency-admin.service.js';
import { OutboxAdmin } from './admin/outbox-admin.service.js';
import { ClaimingService } from './claiming/claiming.service.js';
import { IdempotencyContext } from './context/idempotency.context.js';
import { CLAIM_STORAGE } from './data-layers/data-layer.js';
import { IdempotencyMetadataAccessor } from './decorators/idempotency-metadata.accessor.js';
import { IdempotencyExplorer } from './discovery/idempotency.explorer.js';
import { StoreSchemaCheck } from './discovery/store-schema.check.js';
import { StoredConsumers } from './discovery/stored-consumers.js';
import { IdempotencyHealthIndicator } from './health/idempotency.health.js';
import { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN, type OPTIONS_TYPE } from './idempotency.module-definition.js';
import { resolvedOptionsProviders } from './idempotency.options.js';
import { DeliveryCore } from './delivery/delivery-core.js';
import { DeliveryObserver } from './delivery/delivery-observer.js';
import { DataLayerJoin, storeDialectProvider } from './data-layers/data-layer-join.js';
import { StoreHandle } from './store/store.handle.js';
import { LeaseClaimingService } from './leasing/lease-claiming.service.js';
import { LeaseStores } from './leasing/lease-stores.js';
import { IdempotencyMetricsService } from './metrics/idempotency-metrics.service.js';
import { PrometheusExporter } from './metrics/prometheus.exporter.js';
import { IdempotencyPurgeService } from './purge/idempotency-purge.service.js';
import { PurgeScheduler } from './purge/purge.scheduler.js';
import { ResponseRecording } from './recording/response-recording.js';
import { replayCacheProvider } from './replay-cache/replay-cache.js';
import { HandlerPlans } from './transports/handler-plans.js';
import { HttpDelivery } from './transports/http/http-delivery.js';
import { MessageDelivery } from './transports/message-delivery.js';
import { IdempotentRunner } from './transports/run/idempotent-runner.js';
import { TRANSPORT_PROVIDERS } from './transports/transports.js';
import { IdempotencyTracing } from './tracing/idempotency-tracing.js';
import { StoreSampler } from './metrics/store.sampler.js';
import { Outbox } from './outbox/outbox.js';
import { OutboxRelay } from './outbox/outbox-relay.js';
import { OutboxSchemaCheck } from './outbox/outbox-schema.check.js';
import { OutboxSampler } from './outbox/outbox.sampler.js';

/**
 * Exactly-once handlers on PostgreSQL, through TypeORM (the default) or the data layer given as
 * `dataLayer` (`PgPoolDataLayer`, `MikroOrmDataLayer`). Import it once, after `TypeOrmModule`;
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
    ...resolvedOptionsProviders(MODULE_OPTIONS_TOKEN, 'IdempotencyModule'),
    { provide: CLAIM_STORAGE, useFactory: () => new AsyncLocalStorage() },
    IdempotencyContext,
    IdempotencyMetadataAccessor,
    IdempotencyExplorer,
    StoreSchemaCheck,
    StoredConsumers,
    DataLayerJoin,
    storeDialectProvider,
    StoreHandle,
    outboxTableProvider,
    replayCacheProvider,
    ClaimingService,
    LeaseStores,
    LeaseClaimingService,
    ResponseRecording,
    DeliveryObserver,
    DeliveryCore,
    HandlerPlans,
    HttpDelivery,
    MessageDelivery,
    IdempotentRunner,
    ...TRANSPORT_PROVIDERS,
    IdempotencyMetricsService,
    PrometheusExporter,
    StoreSampler,
    IdempotencyTracing,
    Outbox,
    OutboxSchemaCheck,
    OutboxRelay,
    OutboxSampler,
    IdempotencyPurgeService,
    PurgeScheduler,
    IdempotencyHealthIndicator,
    OutboxAdmin,
    IdempotencyAdmin,
  ],
  // HttpDelivery and MessageDelivery: what @IdempotentHandler()'s interceptor needs in the controllers' modules.
  exports: [IdempotencyContext, IdempotentRunner, Outbox, IdempotencyAdmin, OutboxAdmin, IdempotencyMetricsService, IdempotencyPurgeService, IdempotencyHealthIndicator, HttpDelivery, MessageDelivery],
})
export class IdempotencyModule extends ConfigurableModuleClass {
  /**
   * The module with `options`; with no argument, every default (the default TypeORM data source,
   * `retention: '7d'`, ...). `forRootAsync()` takes a factory, whose answer must be an options
   * object (`{}` for every default): one that returns nothing is refused at start-up.
   */
  static forRoot(options: typeof OPTIONS_TYPE = {}): DynamicModule {
    return super.forRoot(options);
  }
}
