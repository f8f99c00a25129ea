import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import pg from 'pg';
import { freePort } from './demo-process.js';
import { until } from './test-database.js';

/** Server connections PgBouncer opens per database: few, so that the app's 20 clients share them. */
export const PGBOUNCER_POOL_SIZE = 4;

/** A private PgBouncer in transaction pooling mode in front of one database. */
export interface PgBouncer {
  /** The URL of the database through PgBouncer. */
  readonly url: string;
  /** What PgBouncer logged so far, for failure messages. */
  readonly log: () => string;
  stop(): Promise<void>;
}

/** The `pgbouncer` binary on PATH or in Debian's /usr/sbin, if installed. */
function findPgBouncer(): string | undefined {
  const folders = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin'];
  return folders.map((folder) => join(folder, 'pgbouncer')).find((candidate) => existsSync(candidate));
}

/**
 * Whether PgBouncer is installed. When it is not, the suite says so loudly and its tests are
 * skipped (they show as skipped in the summary); with CI=true a missing PgBouncer fails the run.
 */
export function pgBouncerAvailable(): boolean {
  if (findPgBouncer()) {
    return true;
  }
  const reason = 'no pgbouncer binary on PATH or in /usr/sbin';
  if (process.env.CI === 'true') {
    throw new Error(`${reason}; CI=true requires it (.ci/run installs it: apt-get install pgbouncer)`);
  }
  console.warn(`\n*** SKIPPING the PgBouncer suite: ${reason}. Install it (apt-get install pgbouncer) or set CI=true to make this a failure. ***\n`);
  return false;
}

/** A value of a PgBouncer connection string, quoted. */
function quoted(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * Starts a private `pgbouncer` process (not the system service) on a free port of 127.0.0.1, in
 * transaction pooling mode, in front of the database of `databaseUrl`. Clients are trusted (any
 * password); PgBouncer logs in to PostgreSQL with the user and password of `databaseUrl`.
 * `server_round_robin` hands each transaction the server connection idle the longest, as a busy
 * pool does, so consecutive statements of one client land on different server connections.
 * Running as root, PgBouncer is started as `nobody` (it refuses to run as root).
 */
export async function startPgBouncer(databaseUrl: string): Promise<PgBouncer> {
  const binary = findPgBouncer();
  if (!binary) {
    throw new Error('pgbouncer is not installed: check pgBouncerAvailable() first');
  }
  const target = new URL(databaseUrl);
  const database = decodeURIComponent(target.pathname.slice(1));
  const user = decodeURIComponent(target.username);
  const password = decodeURIComponent(target.password);
  const port = await freePort();
  const folder = await mkdtemp(join(tmpdir(), 'idempotency-pgbouncer-'));
  const server = [
    `host=${target.hostname}`,
    `port=${target.port || 5432}`,
    `dbname=${quoted(database)}`,
    `user=${quoted(user)}`,
    ...(password ? [`password=${quoted(password)}`] : []),
  ].join(' ');
  const config = [
    '[databases]',
    `${database} = ${server}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${join(folder, 'userlist.txt')}`,
    'pool_mode = transaction',
    `default_pool_size = ${PGBOUNCER_POOL_SIZE}`,
    'max_client_conn = 200',
    'server_round_robin = 1',
    'log_connections = 0',
    'log_disconnections = 0',
  ].join('\n');
  await writeFile(join(folder, 'pgbouncer.ini'), `${config}\n`);
  await writeFile(join(folder, 'userlist.txt'), `"${user}" ""\n`);
  // Readable by the unprivileged user PgBouncer runs as (the password is the test server's).
  await chmod(folder, 0o755);
  const asRoot = process.getuid?.() === 0;
  const child: ChildProcess = spawn(binary, [...(asRoot ? ['-u', 'nobody'] : []), join(folder, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout?.on('data', (chunk) => (log += chunk));
  child.stderr?.on('data', (chunk) => (log += chunk));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const url = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
    }
    await exited;
    await rm(folder, { recursive: true, force: true });
  };
  try {
    await until(
      async () => {
        if (child.exitCode !== null) {
          throw new Error(`pgbouncer exited with ${child.exitCode}:\n${log}`);
        }
        const client = new pg.Client(url);
        try {
          await client.connect();
        } catch {
          return false;
        }
        try {
          await client.query('SELECT 1');
          return true;
        } finally {
          await client.end();
        }
      },
      'pgbouncer answers',
      10_000,
    );
  } catch (error) {
    await stop();
    throw new Error(`pgbouncer did not start:\n${log}`, { cause: error });
  }
  return { url, log: () => log, stop };
}
