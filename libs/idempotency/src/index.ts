export { IdempotencyModule } from './idempotency.module.js';
export type { IdempotencyModuleOptions, ScopeFunction } from './idempotency.options.js';
export type { HealthOptions } from './health/health.options.js';
export type { MetricsOptions, MetricsRegistry } from './metrics/metrics.options.js';
export type { EncryptionOptions } from './recording/recording.options.js';
export type { PurgeOptions } from './purge/purge.options.js';
export type { ReplayOptions } from './transports/http/http.options.js';
export type { ReplayCacheOptions } from './replay-cache/replay-cache.options.js';
export type { SenderOptions } from './discovery/discovery.options.js';
export type { TracingOptions } from './tracing/tracing.options.js';
export { IdempotentHandler } from './decorators/idempotent-handler.decorator.js';
export { IdempotencyInterceptor } from './transports/idempotency.interceptor.js';
export type { IdempotentHandlerOptions, KeyEntry, KeySource, ScopeSource } from './options/idempotent-handler.options.js';
export type { IdempotencyMode, InFlightPolicy, IsolationLevel, RecordPolicy } from './options/handler-values.js';
export { IdempotencyContext } from './context/idempotency.context.js';
export { IdempotentRunner } from './transports/run/idempotent-runner.js';
export type { IdempotentRunOptions } from './transports/run/idempotent-runner.js';
export type { TransactionStatements } from './data-layers/data-layer.js';
export type { Claimant, ClaimConnection, DataLayerHost, IdempotencyDataLayer, QueryResult, StatementResult } from './data-layers/data-layer.js';
export { TypeOrmDataLayer } from './data-layers/typeorm/typeorm.data-layer.js';
export type { TypeOrmDataLayerOptions } from './data-layers/typeorm/typeorm.data-layer.js';
export { PgPoolDataLayer } from './data-layers/pg/pg-pool.data-layer.js';
export type { PgPoolDataLayerOptions } from './data-layers/pg/pg-pool.data-layer.js';
export { Mysql2PoolDataLayer } from './data-layers/mysql2/mysql2-pool.data-layer.js';
export type { Mysql2Pool, Mysql2PoolDataLayerOptions } from './data-layers/mysql2/mysql2-pool.data-layer.js';
export { MariaDbPoolDataLayer } from './data-layers/mariadb/mariadb-pool.data-layer.js';
export type { MariaDbPool, MariaDbPoolDataLayerOptions } from './data-layers/mariadb/mariadb-pool.data-layer.js';
export { MikroOrmDataLayer } from './data-layers/mikro-orm/mikro-orm.data-layer.js';
export type { MikroOrmDataLayerOptions } from './data-layers/mikro-orm/mikro-orm.data-layer.js';
export type { RecordedResponse } from './claiming/claim.js';
export type { LeaseAttempt, LeaseKey, LeaseRequest, LeaseStore, RemovableEntry, StoredLeaseEntry } from './leasing/lease-store.js';
export { RedisLeaseStore } from './leasing/redis-lease.store.js';
export type { RedisEvalClient } from './leasing/redis-lease.store.js';
export { ProcessedMessage } from './claiming/processed-message.entity.js';
export { CreateProcessedMessagesTable1764633600000 } from './migrations/create-processed-messages-table.migration.js';
export { CreateProcessedMessagesFunctions1796256000000 } from './migrations/create-processed-messages-functions.migration.js';
export { UpgradeProcessedMessagesTable1796342400000 } from './migrations/upgrade-processed-messages-table.migration.js';
export { schemaSql } from './migrations/schema-sql.js';
export { mariaDbOutboxSql, mariaDbSchemaSql } from './migrations/mariadb-schema-sql.js';
export { CreateProcessedMessagesTableMariaDb1796601600000 } from './migrations/create-processed-messages-table-mariadb.migration.js';
export { CreateOutboxMessagesTableMariaDb1796688000000 } from './migrations/create-outbox-messages-table-mariadb.migration.js';
export type { SchemaMigrationSql } from './migrations/schema-sql.js';
export type { Duration } from './duration/duration.js';
export { DEFAULT_OUTBOX_TABLE_NAME, DEFAULT_TABLE_NAME, IDEMPOTENCY_CHANNELS, IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, MAX_KEY_LENGTH } from './idempotency.constants.js';
export {
  IdempotencyAdminError,
  IdempotencyClaimTransactionError,
  IdempotencyCommitRefusedError,
  IdempotencyConsumerConflictError,
  IdempotencyContextError,
  IdempotencyError,
  IdempotencyInFlightError,
  IdempotencyKeyError,
  IdempotencyKeyReusedError,
  IdempotencyLeaseLostError,
  IdempotencyOptionsError,
  IdempotencyOutboxError,
  IdempotencyPublishRefusedError,
  IdempotencyPurgeError,
  IdempotencyRecordUnreadableError,
  IdempotencyResponseTooLargeError,
  IdempotencyRetentionError,
  IdempotencySchemaError,
  IdempotencyTransactionAbortedError,
  IdempotencyTransientError,
  IdempotencyUnavailableError,
  IdempotencyUnsupportedHandlerError,
} from './errors/idempotency.errors.js';
export { IdempotencyAdmin } from './admin/idempotency-admin.service.js';
export { OutboxAdmin } from './admin/outbox-admin.service.js';
export type { AdminOutboxActionOptions, AdminOutboxListOptions, AdminOutboxLookupOptions, AdminOutboxMessage } from './admin/outbox-admin.service.js';
export { IdempotencyAdminModule } from './admin/idempotency-admin.module.js';
export type { IdempotencyAdminModuleOptions } from './admin/idempotency-admin.options.js';
export type {
  AdminForgetOptions,
  AdminForgetResult,
  AdminKeyQuery,
  AdminKeyRecord,
  AdminKeyState,
  AdminListOptions,
  AdminLookupOptions,
  AdminReleaseOptions,
  AdminUnreadableResponse,
} from './admin/idempotency-admin.service.js';
export type { PurgeOutcome, PurgeRun, UnreadableReason } from './errors/idempotency.errors.js';
export { IdempotencyPurgeService } from './purge/idempotency-purge.service.js';
export { IdempotencyHealthIndicator } from './health/idempotency.health.js';
export type { IdempotencyHealthResult } from './health/idempotency.health.js';
export { IdempotencyMetricsService } from './metrics/idempotency-metrics.service.js';
export type {
  AdminActionCounts,
  DeliveryCounts,
  IdempotencyMetricsSnapshot,
  LeaseRenewalCounts,
  LeaseRenewalOutcome,
  LeaseCounts,
  LeaseEvent,
  PurgeFigures,
  RefusalCounts,
  SenderDuplicateRate,
  OutboxCounts,
  StoreSample,
} from './metrics/idempotency-metrics.service.js';
export type { OutboxSample } from './store/outbox-sample.js';
export type { DeliveryOutcome } from './metrics/delivery-outcome.js';
export { Outbox } from './outbox/outbox.js';
export type { OutboxMessage, OutboxPublishOptions } from './outbox/outbox.js';
export type { OutboxOptions, OutboxRelayOptions } from './outbox/outbox.options.js';
export { OutboxRelay } from './outbox/outbox-relay.js';
export type { OutboxRelayRun, OutboxRelayStats } from './outbox/outbox-relay.js';
export type { OutboxPublisher, OutgoingMessage, PublishAttempt } from './outbox/outbox-publisher.js';
export { RabbitMqPublisher } from './outbox/publishers/rabbitmq.publisher.js';
export type { RabbitMqPublisherOptions } from './outbox/publishers/rabbitmq.publisher.js';
export { JetStreamPublisher } from './outbox/publishers/jetstream.publisher.js';
export type { JetStreamPublisherOptions, JetStreamPublishing } from './outbox/publishers/jetstream.publisher.js';
export { BullMqPublisher } from './outbox/publishers/bullmq.publisher.js';
export type { BullMqPublisherOptions } from './outbox/publishers/bullmq.publisher.js';
export { SqsPublisher } from './outbox/publishers/sqs.publisher.js';
export type { SqsPublisherOptions, SqsSending } from './outbox/publishers/sqs.publisher.js';
export { KafkaPublisher } from './outbox/publishers/kafka.publisher.js';
export type { KafkaProducing, KafkaPublisherOptions } from './outbox/publishers/kafka.publisher.js';
export { CreateOutboxMessagesTable1796428800000 } from './migrations/create-outbox-messages-table.migration.js';
export { CreateKafkaOffsetsTable1796515200000 } from './migrations/create-kafka-offsets-table.migration.js';
