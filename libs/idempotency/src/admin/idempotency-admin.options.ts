import type { IdempotencyModuleOptions } from '../idempotency.options.js';

/**
 * Options of `IdempotencyAdminModule.forRoot()` / `forRootAsync()`: the options of the service's
 * `IdempotencyModule` that say where the store is and how to read it, with the same defaults. The
 * service's own options object can be passed as it is: nothing else of it is read.
 */
export type IdempotencyAdminModuleOptions = Pick<IdempotencyModuleOptions, 'dataLayer' | 'dataSource' | 'tableName' | 'encryption' | 'stores' | 'outbox'>;

/**
 * What the admin module reads of `options`, as `IdempotencyModule` options.
 * @internal
 */
export function adminModuleOptions({ dataLayer, dataSource, tableName, encryption, stores, outbox }: IdempotencyAdminModuleOptions = {}): IdempotencyModuleOptions {
  return { dataLayer, dataSource, tableName, encryption, stores, outbox: outbox && { ...outbox, relay: false } };
}
