/** The message texts of the store's data source and table. */
export const joinMessages = {
  invalidTableName: (value: unknown) =>
    `tableName must be a plain PostgreSQL identifier (letters, digits, underscores) of at most 56 characters; got ${JSON.stringify(value)}.`,
  invalidDataSource: (value: unknown) => `dataSource must be a data source name; got ${JSON.stringify(value)}.`,
  dataSourceMissing: (name: string | undefined) =>
    name === undefined
      ? 'IdempotencyModule found no TypeORM data source (it looked for the default data source): import ' +
        'TypeOrmModule.forRoot(...) in the application, with the PostgreSQL database that holds the processed-messages ' +
        "table, or set the module's dataSource option to the name of the data source that does."
      : `IdempotencyModule found no TypeORM data source named '${name}' (its dataSource option): import ` +
        `TypeOrmModule.forRoot({ name: '${name}', ... }) in the application, or set dataSource to the name of a data ` +
        'source it has (leave it out for the default one).',
  otherDataSourceUsed: (consumer: string, dataSource: string) =>
    `${consumer} used the data source ${dataSource} inside its idempotent handler. Its writes commit on their own, not ` +
    "with the claim: a crash between them and the claim's commit applies them again on redelivery. Write through the " +
    "claims' data source, or make those writes idempotent themselves.",
};
