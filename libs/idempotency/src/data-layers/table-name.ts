import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { DEFAULT_TABLE_NAME } from '../idempotency.constants.js';

/** At most 56 characters: `<table>_record`, the longest name the module derives, must fit PostgreSQL's 63. */
const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,55}$/;

/**
 * The processed-messages table's name, `processed_messages` when none is given.
 * @throws IdempotencyOptionsError when it is not a plain PostgreSQL identifier of at most 56 characters.
 * @internal
 */
export function toTableName(value: unknown, option = 'tableName'): string {
  const table = value ?? DEFAULT_TABLE_NAME;
  if (typeof table !== 'string' || !PLAIN_IDENTIFIER.test(table)) {
    throw new IdempotencyOptionsError(
      `${option} must be a plain PostgreSQL identifier (letters, digits, underscores) of at most 56 characters; got ${JSON.stringify(value)}.`,
    );
  }
  return table;
}
