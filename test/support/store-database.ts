import { DataSource } from 'typeorm';
import { CreateProcessedMessagesFunctions1796256000000, CreateProcessedMessagesTable1764633600000, UpgradeProcessedMessagesTable1796342400000 } from 'nestjs-idempotent-consumer';
import { createTestDatabase, type TestDatabase } from './test-database.js';

/** A database of its own holding the processed-messages table of the shipped migrations. */
export interface StoreDatabase extends TestDatabase {
  readonly name: string;
  readonly serverVersion: string;
  /** A server setting, as SHOW gives it. */
  setting(name: string): Promise<string>;
  /**
   * A TypeORM data source on the database with a pool of `poolSize`, as a service's, destroyed
   * after `use`: its backends then exit, which flushes their WAL and table statistics.
   */
  withDataSource<T>(poolSize: number, use: (dataSource: DataSource) => Promise<T>): Promise<T>;
}

/** Creates a database on the server of `serverUrl` and runs the library's shipped migrations of the store in it; `drop()` drops it. */
export async function openStoreDatabase(serverUrl: string): Promise<StoreDatabase> {
  // Queries outside any data source's pool, on a pool of one connection of their own.
  const database = await createTestDatabase(serverUrl, 1);
  const withDataSource = async <T>(poolSize: number, use: (dataSource: DataSource) => Promise<T>) => {
    const dataSource = new DataSource({
      type: 'postgres',
      url: database.url,
      migrations: [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000],
      extra: { max: poolSize },
    });
    await dataSource.initialize();
    try {
      return await use(dataSource);
    } finally {
      await dataSource.destroy();
    }
  };
  await withDataSource(1, (dataSource) => dataSource.runMigrations());
  const setting = async (name: string) => (await database.query<Record<string, string>>(`SHOW ${name}`))[0][name];
  return { ...database, name: new URL(database.url).pathname.slice(1), serverVersion: await setting('server_version'), setting, withDataSource };
}
