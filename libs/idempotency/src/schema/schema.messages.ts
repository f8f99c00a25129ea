/** The message texts of the processed-messages table's schema. */
export const schemaMessages = {
  invalidTableName: (value: unknown) =>
    `tableName must be a plain PostgreSQL identifier (letters, digits, underscores) of at most 56 characters; got ${JSON.stringify(value)}.`,
  schemaMissing: (table: string, missing: readonly string[], migrations: readonly string[]) =>
    `The processed-messages store (table ${table}) lacks what this version of nestjs-idempotent-consumer needs: ` +
    `${missing.join('; ')}. Add ${listed(migrations)} to the data source's migrations and run them. ` +
    "The data source needs all of the library's migrations, in this order: CreateProcessedMessagesTable1764633600000, " +
    'CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000 (each subclassed with the ' +
    "table's name if it is not the default); the last brings a table created by an earlier version to the current shape.",
};

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}
