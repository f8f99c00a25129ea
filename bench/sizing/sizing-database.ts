import pg from 'pg';
import { DataSource } from 'typeorm';
import { CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000, CreateProcessedMessagesTable1764633600000, DEFAULT_TABLE_NAME } from 'nestjs-idempotent-consumer';

/** The server the sizing uses unless DATABASE_URL names another: this machine's PostgreSQL. */
export const DEFAULT_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** The processed-messages table, as the shipped migration names it. */
export const TABLE = DEFAULT_TABLE_NAME;

/** A database of the sizing's own, holding the processed-messages table of the shipped migration. */
export interface SizingDatabase {
  readonly url: string;
  readonly name: string;
  readonly serverVersion: string;
  /** A query on a session of its own, outside any data source's pool. */
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
  /** A server setting, as SHOW gives it. */
  setting(name: string): Promise<string>;
  /**
   * A TypeORM data source on the database with a pool of `poolSize`, as a service's, destroyed
   * after `use`: its backends then exit, which flushes their WAL and table statistics.
   */
  withDataSource<T>(poolSize: number, use: (dataSource: DataSource) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * Creates database `idem_sizing_<pid>_<label>` on the server of `serverUrl` and runs the library's
 * shipped migration in it. `close()` drops it.
 */
export async function openSizingDatabase(serverUrl: string, label: string): Promise<SizingDatabase> {
  const name = `idem_sizing_${process.pid}_${label}`;
  const admin = new pg.Client(serverUrl);
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const withDataSource = async <T>(poolSize: number, use: (dataSource: DataSource) => Promise<T>) => {
    const dataSource = new DataSource({
      type: 'postgres',
      url: url.toString(),
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
  const session = new pg.Client(url.toString());
  await session.connect();
  // DROP ... WITH (FORCE) ends this session's backend; pg reports that as an error event.
  session.on('error', () => undefined);
  const query = async <T>(sql: string, params?: unknown[]) => (await session.query(sql, params)).rows as T[];
  const setting = async (setting: string) => (await session.query(`SHOW ${setting}`)).rows[0][setting] as string;
  return {
    url: url.toString(),
    name,
    serverVersion: await setting('server_version'),
    query,
    setting,
    withDataSource,
    close: async () => {
      await session.end();
      await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
