import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { toTableName } from './table-name.js';
import type { IdempotencyDataLayer } from './data-layer.js';
import { dataLayerMessages } from './data-layer.messages.js';
import { MikroOrmDataLayer } from './mikro-orm/mikro-orm.data-layer.js';
import { PgPoolDataLayer } from './pg/pg-pool.data-layer.js';
import { TypeOrmDataLayer } from './typeorm/typeorm.data-layer.js';

/**
 * Where the processed-messages store is: the data layer and the table.
 * @internal
 */
export interface ResolvedStoreOptions {
  readonly dataLayer: IdempotencyDataLayer;
  readonly tableName: string;
}

/** The token of the store's slice of the module's options. @internal */
export const STORE_OPTIONS = Symbol('IDEMPOTENCY:STORE_OPTIONS');

/**
 * `dataLayer` (or TypeORM's `dataSource`) and `tableName` with their defaults applied: the
 * default data source of TypeORM, and `processed_messages`. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveStore(options: { dataLayer?: unknown; dataSource?: unknown; tableName?: unknown }): ResolvedStoreOptions {
  const table = toTableName(options.tableName);
  if (options.dataLayer === undefined) {
    return { dataLayer: new TypeOrmDataLayer({ dataSource: options.dataSource as string | undefined }), tableName: table };
  }
  if (options.dataSource !== undefined) {
    throw new IdempotencyOptionsError(dataLayerMessages.dataLayerAndDataSource());
  }
  if (!(options.dataLayer instanceof TypeOrmDataLayer) && !(options.dataLayer instanceof PgPoolDataLayer) && !(options.dataLayer instanceof MikroOrmDataLayer)) {
    throw new IdempotencyOptionsError(dataLayerMessages.invalidDataLayer(options.dataLayer));
  }
  return { dataLayer: options.dataLayer, tableName: table };
}
