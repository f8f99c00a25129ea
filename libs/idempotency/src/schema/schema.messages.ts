/** The message texts of the processed-messages table's schema. */
export const schemaMessages = {
  invalidTableName: (value: unknown) =>
    `tableName must be a plain PostgreSQL identifier (letters, digits, underscores) of at most 56 characters; got ${JSON.stringify(value)}.`,
};
