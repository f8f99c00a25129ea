import { shownKey } from '../keys/scoped-key.js';

/** What a `dataLayer` option is, for a message: its class, or its value. */
function describe(value: unknown): string {
  const name = (value as { constructor?: { name?: unknown } } | null | undefined)?.constructor?.name;
  return typeof value === 'object' && value !== null && typeof name === 'string' && name !== 'Object' ? `the ${name} given` : `the value given (${String(value)})`;
}

/** The message texts of the data layers and the store's table. */
export const dataLayerMessages = {
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
  dataLayerAndDataSource: () =>
    'IdempotencyModule takes dataSource (a TypeORM data source name) or dataLayer, not both: pass the name to the ' +
    "layer instead, dataLayer: new TypeOrmDataLayer({ dataSource: 'name' }).",
  invalidDataLayer: (value: unknown, member: string) =>
    `dataLayer must be an IdempotencyDataLayer (new TypeOrmDataLayer(...), new PgPoolDataLayer(...), new MikroOrmDataLayer(...) ` +
    `or one of yours), but ${describe(value)} has no ${member === 'schemaAdvice' ? "schemaAdvice ('typeorm-migrations' or 'sql-files')" : `${member}${member === 'name' ? ' (a string)' : '()'}`}.`,
  poolMissing: (token: string) =>
    `PgPoolDataLayer found no provider ${token} in the application (its pool option): provide the pg Pool your data ` +
    'layer writes through under that token, or pass the Pool itself.',
  typeOrmTypeUnsupported: (type: string) =>
    `The TypeORM data source that holds the processed-messages table is of type '${type}': the store is on PostgreSQL ` +
    "('postgres') or MariaDB ('mariadb', 'mysql').",
  typeOrmReplicationOnMariaDb: () =>
    'The TypeORM data source on MariaDB has replication options: the claims need one pool of the primary, which TypeORM makes ' +
    'only without them. Give the store a data source of its own, without replication (TypeOrmDataLayer({ dataSource: name })).',
  notAMysql2Pool: (token: string) =>
    `Mysql2PoolDataLayer's pool (${token}) is not a mysql2 pool: give it the pool your data layer was built on (createPool(...) ` +
    "from 'mysql2' or 'mysql2/promise').",
  notAMariaDbPool: (token: string) =>
    `MariaDbPoolDataLayer's pool (${token}) is not a pool of the mariadb connector: give it the pool your data layer was built on ` +
    "(createPool(...) from 'mariadb'), the one Prisma's PrismaMariaDb adapter was given.",
  notAPool: (token: string) =>
    `PgPoolDataLayer's pool (${token}) is not a pg Pool: give it the Pool your data layer was built on (new Pool(...) ` +
    "from 'pg'), the one Drizzle, Kysely or Prisma's PrismaPg adapter were given.",
  otherPoolUsed: (consumer: string) =>
    `${consumer} sent a statement through another pg Pool than the claims' inside its idempotent handler. It commits on ` +
    "its own, not with the claim: a crash between it and the claim's commit applies it again on redelivery. Write " +
    "through the claims' pool (the Drizzle, Kysely or Prisma instance built on it), or make that write idempotent itself.",
  mikroOrmMissing: () =>
    'MikroOrmDataLayer found no MikroORM instance in the application (its orm option): import MikroOrmModule.forRoot(...) ' +
    'from @mikro-orm/nestjs, or provide the instance under the token given as orm.',
  mikroOrmNotSql: () =>
    "MikroOrmDataLayer's MikroORM instance has no knex client on PostgreSQL or MariaDB: it needs @mikro-orm/postgresql " +
    'or @mikro-orm/mariadb.',
  noConnection: (consumer: string, key: string, timeoutMs: number, pool: { size?: number; waiting?: number }) =>
    `No database connection came within ${timeoutMs} ms for ${shownKey(key)} (${consumer})` +
    (pool.size === undefined ? '' : `: all ${pool.size} connections of the pool were busy, ${pool.waiting ?? 0} requests waiting`) +
    '. Nothing was claimed; retry. Size the pool for the handlers that run at once, or raise connectionTimeout.',
  connectFailed: (consumer: string, key: string, reason: string) =>
    `The database could not be reached for ${shownKey(key)} (${consumer}): ${reason}. Nothing was claimed; retry.`,
  claimTransactionEnded: (consumer: string) =>
    `${consumer} ended the claim's transaction itself (a COMMIT or ROLLBACK sent as SQL), so its work did not commit ` +
    'with the claim. The transaction belongs to @IdempotentHandler(): return from the handler to commit, throw to roll back.',
  claimTransactionControlled: (consumer: string, call: string) =>
    `${consumer} called ${call} on the claim's transaction, which belongs to @IdempotentHandler(): return from the ` +
    "handler to commit it, throw to roll it back. A transaction your data layer opens inside the handler is a savepoint " +
    '(TypeORM manager.transaction(), Drizzle or Kysely db.transaction(), Prisma $transaction(), MikroORM em.transactional(), ' +
    'a BEGIN and its COMMIT sent as SQL) and is fine.',
  strongerIsolationRequested: (consumer: string, requested: string, claim: string) =>
    `${consumer} asked for a ${requested} transaction inside the claim's ${claim} transaction, which cannot be raised. ` +
    `Run the handler at that level: @IdempotentHandler({ isolationLevel: '${requested}' }).`,
  transactionsOverlapped: (consumer: string, waitMs: number) =>
    `${consumer} opened a transaction of its data layer while another of its transactions was open, and it waited ` +
    `${waitMs} ms (connectionTimeout) for that one to end. The claim has one connection: transactions that run at the ` +
    'same time take turns on it. One opened inside another through the injected client (not the transaction\'s own ' +
    'tx or manager) waits for the outer one, which waits for it: open it through the outer transaction\'s object. ' +
    'Nothing of this delivery commits.',
  foreignWorkRolledBack: (consumer: string) =>
    `${consumer} rolled back a transaction of its data layer in which a statement sent outside that transaction had ` +
    "run (the claim has one connection, so it ran inside the open savepoint), so that statement's work was undone though " +
    'it had succeeded. Nothing of this delivery commits: send the statements of a transaction through its own tx or ' +
    'manager, and others after it ends.',
};
