import { schemaMessages } from '../schema/schema.messages.js';
import { IdempotencyError } from './idempotency.error.js';

/**
 * The processed-messages store lacks what this version of the module reads or writes: the table,
 * a column (or a column of an earlier shape), or one of the claim's functions. Thrown at start-up,
 * where the application does not start, and by a claim that finds a function gone. The message
 * names what is missing and the migrations to add.
 */
export class IdempotencySchemaError extends IdempotencyError {
  override readonly name = 'IdempotencySchemaError';

  /**
   * @param table The processed-messages table.
   * @param missing What is missing or of an earlier shape, one phrase each.
   * @param migrations The library's migrations that bring the store to the current shape.
   */
  constructor(
    readonly table: string,
    readonly missing: readonly string[],
    readonly migrations: readonly string[],
    options?: ErrorOptions,
  ) {
    super(schemaMessages.schemaMissing(table, missing, migrations), options);
  }
}
