import { DEFAULT_TABLE_NAME } from './idempotency.constants.js';
import { type Duration, toMilliseconds } from './duration/duration.js';
import { IdempotencyOptionsError } from './errors/idempotency-options.error.js';
import { messages } from './idempotency.messages.js';

/** Options of `IdempotencyModule.forRoot()` / `forRootAsync()`. Every field is optional. */
export interface IdempotencyModuleOptions {
  /**
   * Name of the TypeORM data source (as given to `TypeOrmModule.forRoot({ name })`) whose
   * PostgreSQL database holds the processed-messages table and runs the handlers' transactions.
   * @default the default data source
   */
  dataSource?: string;
  /**
   * The processed-messages table. Create it with `CreateProcessedMessagesTable` (subclass it to
   * pass another name).
   * @default 'processed_messages'
   */
  tableName?: string;
  /**
   * How long a processed message id is remembered, for handlers that set no `retention`.
   * A redelivery later than this is processed again.
   * @default '7d'
   */
  retention?: Duration;
  /**
   * How long a delivery whose handler uses `inFlight: 'wait'` waits for its twin to commit before
   * it is answered as in flight (409) after all.
   * @default '30s'
   */
  inFlightWaitTimeout?: Duration;
}

/** The module's options with defaults applied and durations in milliseconds. */
export interface ResolvedIdempotencyOptions {
  dataSource: string | undefined;
  tableName: string;
  retentionMs: number;
  inFlightWaitTimeoutMs: number;
}

const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,58}$/;

/** Applies the defaults and validates; the one place where defaults live. */
export function resolveModuleOptions(options: IdempotencyModuleOptions = {}): ResolvedIdempotencyOptions {
  const tableName = options.tableName ?? DEFAULT_TABLE_NAME;
  if (!PLAIN_IDENTIFIER.test(tableName)) {
    throw new IdempotencyOptionsError(messages.invalidTableName(options.tableName));
  }
  if (options.dataSource !== undefined && (typeof options.dataSource !== 'string' || options.dataSource === '')) {
    throw new IdempotencyOptionsError(messages.invalidDataSource(options.dataSource));
  }
  return {
    dataSource: options.dataSource,
    tableName,
    retentionMs: toMilliseconds('retention', options.retention ?? '7d'),
    inFlightWaitTimeoutMs: toMilliseconds('inFlightWaitTimeout', options.inFlightWaitTimeout ?? '30s'),
  };
}
