import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { DEFAULT_TABLE_NAME } from '../idempotency.constants.js';
import { joinMessages } from './join.messages.js';

/**
 * Where the processed-messages store is: the TypeORM data source and the table.
 * @internal
 */
export interface ResolvedStoreOptions {
  /** undefined: the default data source. */
  readonly dataSource: string | undefined;
  readonly tableName: string;
}

/** The token of the store's slice of the module's options. @internal */
export const STORE_OPTIONS = Symbol('IDEMPOTENCY:STORE_OPTIONS');

/** At most 56 characters: `<table>_record`, the longest name the module derives, must fit PostgreSQL's 63. */
const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,55}$/;

/**
 * `dataSource` and `tableName` with their defaults applied. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveStore(dataSource: unknown, tableName: unknown): ResolvedStoreOptions {
  const table = tableName ?? DEFAULT_TABLE_NAME;
  if (typeof table !== 'string' || !PLAIN_IDENTIFIER.test(table)) {
    throw new IdempotencyOptionsError(joinMessages.invalidTableName(tableName));
  }
  if (dataSource !== undefined && (typeof dataSource !== 'string' || dataSource === '')) {
    throw new IdempotencyOptionsError(joinMessages.invalidDataSource(dataSource));
  }
  return { dataSource, tableName: table };
}
