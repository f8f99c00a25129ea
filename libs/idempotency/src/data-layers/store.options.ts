import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { toTableName } from './table-name.js';
import type { IdempotencyDataLayer } from './data-layer.js';
import { dataLayerMessages } from './data-layer.messages.js';
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
  const missing = missingMember(options.dataLayer);
  if (missing !== undefined) {
    throw new IdempotencyOptionsError(dataLayerMessages.invalidDataLayer(options.dataLayer, missing));
  }
  return { dataLayer: options.dataLayer as IdempotencyDataLayer, tableName: table };
}

/** What `IdempotencyDataLayer` requires of each member, by name. */
const MEMBERS: Record<keyof IdempotencyDataLayer, (value: unknown) => boolean> = {
  name: (value) => typeof value === 'string',
  attach: (value) => typeof value === 'function',
  start: (value) => typeof value === 'function',
  query: (value) => typeof value === 'function',
  connect: (value) => typeof value === 'function',
  schemaAdvice: (value) => value === 'typeorm-migrations' || value === 'sql-files',
  dialect: (value) => value === undefined || value === 'postgres' || value === 'mariadb',
};

/** The first member of `IdempotencyDataLayer` that `layer` lacks (or has of another kind); undefined when it has them all. */
function missingMember(layer: unknown): string | undefined {
  if (typeof layer !== 'object' || layer === null) {
    return 'name';
  }
  return Object.entries(MEMBERS).find(([member, fits]) => !fits((layer as Record<string, unknown>)[member]))?.[0];
}
