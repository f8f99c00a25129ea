import { outboxTableProvider } from '../outbox/outbox.options.js';
import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AsyncLocalStorage } from 'node:async_hooks';
import { CLAIM_STORAGE } from '../data-layers/data-layer.js';
import { resolvedOptionsProviders } from '../idempotency.options.js';
import { DataLayerJoin } from '../data-layers/data-layer-join.js';
import { LeaseStores } from '../leasing/lease-stores.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import { replayCacheProvider } from '../replay-cache/replay-cache.js';
import { ADMIN_MODULE_OPTIONS_TOKEN, type ADMIN_OPTIONS_TYPE, ConfigurableAdminModuleClass } from './idempotency-admin.module-definition.js';
import { adminModuleOptions } from './idempotency-admin.options.js';
import { IdempotencyAdmin } from './idempotency-admin.service.js';
import { OutboxAdmin } from './outbox-admin.service.js';
import { StoreHandle } from '../store/store.handle.js';

/**
 * `IdempotencyAdmin` and `OutboxAdmin` alone, for a script run during an incident: it opens the store through the
 * script's own TypeORM data source and starts nothing else. Import it beside a
 * `TypeOrmModule.forRoot()` of the script's own, never beside the service's `AppModule`, whose
 * modules start what they start in any application context: broker consumers (BullMQ workers,
 * golevelup subscriptions, SQS pollers), the purge timer, the store sampler, migrations with
 * `migrationsRun`. It discovers no handler and checks no schema. Give it the options of the
 * service's `IdempotencyModule` that say where the store is (`dataSource`, `tableName`,
 * `encryption` to open sealed records, `stores` for a lease store): the service's own options
 * object will do.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     TypeOrmModule.forRoot({ type: 'postgres', url: process.env.DATABASE_URL }),
 *     IdempotencyAdminModule.forRoot({ encryption: { keys, current } }),
 *   ],
 * })
 * class AdminScriptModule {}
 *
 * const context = await NestFactory.createApplicationContext(AdminScriptModule);
 * const admin = context.get(IdempotencyAdmin);
 * ```
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    ...resolvedOptionsProviders(ADMIN_MODULE_OPTIONS_TOKEN, 'IdempotencyAdminModule', adminModuleOptions),
    { provide: CLAIM_STORAGE, useFactory: () => new AsyncLocalStorage() },
    DataLayerJoin,
    StoreHandle,
    outboxTableProvider,
    LeaseStores,
    IdempotencyMetricsService,
    replayCacheProvider,
    OutboxAdmin,
    IdempotencyAdmin,
  ],
  exports: [IdempotencyAdmin, OutboxAdmin],
})
export class IdempotencyAdminModule extends ConfigurableAdminModuleClass {
  /** The module with `options`; with no argument, every default (the default TypeORM data source, the default table). */
  static forRoot(options: typeof ADMIN_OPTIONS_TYPE = {}): DynamicModule {
    return super.forRoot(options);
  }
}
