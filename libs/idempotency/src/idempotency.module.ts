import { Module } from '@nestjs/common';
import { AsyncLocalStorage } from 'node:async_hooks';
import { ClaimingService } from './claiming/claiming.service.js';
import { IdempotencyContext } from './context/idempotency.context.js';
import { IdempotencyMetadataAccessor } from './decorators/idempotency-metadata.accessor.js';
import { CLAIM_STORAGE, MODULE_OPTIONS_TOKEN, RESOLVED_OPTIONS } from './idempotency.internal-constants.js';
import { ConfigurableModuleClass } from './idempotency.module-definition.js';
import { type IdempotencyModuleOptions, resolveModuleOptions } from './idempotency.options.js';
import { HttpDelivery } from './transports/http/http-delivery.js';
import { IdempotencyInterceptor } from './transports/idempotency.interceptor.js';
import { RmqAcknowledgements } from './transports/rpc/rmq-acknowledgements.js';
import { RpcDelivery } from './transports/rpc/rpc-delivery.js';

/**
 * Exactly-once handlers on PostgreSQL through TypeORM. Import it once, after `TypeOrmModule`;
 * it is global unless `isGlobal: false`.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     TypeOrmModule.forRoot({ type: 'postgres', url, migrations: [CreateProcessedMessagesTable1764633600000] }),
 *     IdempotencyModule.forRoot({ retention: '7d' }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
@Module({
  providers: [
    {
      provide: RESOLVED_OPTIONS,
      inject: [MODULE_OPTIONS_TOKEN],
      useFactory: (options: IdempotencyModuleOptions) => resolveModuleOptions(options),
    },
    { provide: CLAIM_STORAGE, useFactory: () => new AsyncLocalStorage() },
    IdempotencyContext,
    IdempotencyMetadataAccessor,
    ClaimingService,
    HttpDelivery,
    RmqAcknowledgements,
    RpcDelivery,
    IdempotencyInterceptor,
  ],
  exports: [
    IdempotencyContext,
    IdempotencyMetadataAccessor,
    ClaimingService,
    HttpDelivery,
    RmqAcknowledgements,
    RpcDelivery,
    IdempotencyInterceptor,
    RESOLVED_OPTIONS,
  ],
})
export class IdempotencyModule extends ConfigurableModuleClass {}
