import { errorMessages } from './error.messages.js';
import { IdempotencyError } from './idempotency.error.js';

/**
 * The processed-messages store lacks what this version of the module reads or writes: the table,
 * a column (or a column of an earlier shape), or one of the claim's functions. Thrown at start-up,
 * where the application does not start, and by a delivery whose claim finds a function gone
 * (dropped since the start), which HTTP answers 500 problem+json `store-schema` and a broker
 * retries. The message names what is missing, the migrations that create it, and how to recreate
 * a function whose migrations are recorded as run already.
 */
export class IdempotencySchemaError extends IdempotencyError {
  override readonly name = 'IdempotencySchemaError';

  /**
   * @param table The processed-messages table.
   * @param missing What is missing or of an earlier shape, one phrase each.
   * @param migrations The library's migrations that bring the store to the current shape.
   * @param options `droppedSinceStart`: found missing by a delivery, after the start-up check found it there.
   */
  constructor(
    readonly table: string,
    readonly missing: readonly string[],
    readonly migrations: readonly string[],
    options?: ErrorOptions & { readonly droppedSinceStart?: boolean },
  ) {
    super(options?.droppedSinceStart ? errorMessages.functionDropped(table, missing) : errorMessages.schemaMissing(table, missing, migrations), options);
  }
}
