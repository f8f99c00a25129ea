import { DEFAULT_TABLE_NAME } from '../idempotency.constants.js';

/** The message texts of the processed-messages table's schema. */
export const schemaMessages = {
  invalidTableName: (value: unknown) =>
    `tableName must be a plain PostgreSQL identifier (letters, digits, underscores) of at most 56 characters; got ${JSON.stringify(value)}.`,
  schemaMissing: (table: string, missing: readonly string[], migrations: readonly string[]) =>
    `The processed-messages store (table ${table}) lacks what this version of nestjs-idempotent-consumer needs: ` +
    `${missing.join('; ')}. Add ${listed(migrations)} to the data source's migrations and run them. ` +
    (migrations.includes(CREATE_FUNCTIONS) && !migrations.includes(CREATE_TABLE)
      ? `If they are recorded as run already (a function was dropped after), TypeORM will not run them again: ${recreateFunctions(table)} `
      : '') +
    "The data source needs all of the library's migrations, in this order: CreateProcessedMessagesTable1764633600000, " +
    'CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000 (each subclassed with the ' +
    "table's name if it is not the default); the last brings a table created by an earlier version to the current shape.",
  functionDropped: (table: string, missing: readonly string[]) =>
    `The processed-messages store (table ${table}) lacks what this version of nestjs-idempotent-consumer needs: ${missing.join('; ')}. ` +
    'It was there when the application started, so it was dropped since, and TypeORM will not run the migrations it has ' +
    `recorded again: ${recreateFunctions(table)}`,
};

const CREATE_TABLE = 'CreateProcessedMessagesTable1764633600000';
const CREATE_FUNCTIONS = 'CreateProcessedMessagesFunctions1796256000000';

/** How to bring back the claim's functions when the migrations that create them are recorded as run. */
function recreateFunctions(table: string): string {
  const argument = table === DEFAULT_TABLE_NAME ? '' : `'${table}'`;
  return (
    "recreate the claim's functions by running UpgradeProcessedMessagesTable1796342400000's up() once more, which (re)creates " +
    'both with CREATE OR REPLACE and changes nothing else on a table of the current shape: with a query runner of the data ' +
    `source, \`await new UpgradeProcessedMessagesTable1796342400000(${argument}).up(queryRunner)\` (or your subclass of it), ` +
    "or delete that migration's row from TypeORM's migrations table and run the migrations again."
  );
}

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}
