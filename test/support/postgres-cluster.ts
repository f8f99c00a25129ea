import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { appendFile, chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './demo-process.js';
import { until } from './test-database.js';

const run = promisify(execFile);

/** The folder that holds Debian's PostgreSQL server binaries: /usr/lib/postgresql/<version>/bin, the newest version with pg_basebackup. */
function findServerBinaries(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) {
    return undefined;
  }
  return readdirSync(root)
    .filter((version) => existsSync(join(root, version, 'bin', 'pg_basebackup')))
    .sort((a, b) => Number(b) - Number(a))
    .map((version) => join(root, version, 'bin'))[0];
}

/** Whether this process runs as root: initdb and pg_ctl refuse to, so the clusters then run as the `postgres` user. */
function runsAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/**
 * Whether the machine can run private PostgreSQL clusters with replication: the server binaries
 * (initdb, pg_ctl, pg_basebackup) under /usr/lib/postgresql, and, when the suite runs as root, the
 * `postgres` user and `runuser` to start them as that user. When it cannot, the suite says so
 * loudly and its tests are skipped (they show as skipped in the summary); with CI=true that fails
 * the run instead.
 */
export function postgresClustersAvailable(): boolean {
  const reason = !findServerBinaries()
    ? 'no PostgreSQL server binaries with pg_basebackup under /usr/lib/postgresql/*/bin'
    : runsAsRoot() && !postgresUserExists()
      ? 'running as root, and there is no postgres user (or no runuser) to run the clusters as'
      : undefined;
  if (!reason) {
    return true;
  }
  if (process.env.CI === 'true') {
    throw new Error(`${reason}; CI=true requires them (apt-get install postgresql)`);
  }
  console.warn(`\n*** SKIPPING the failover suite: ${reason}. Install them (apt-get install postgresql) or set CI=true to make this a failure. ***\n`);
  return false;
}

function postgresUserExists(): boolean {
  try {
    execFileSync('runuser', ['-u', 'postgres', '--', 'true']);
    return true;
  } catch {
    return false;
  }
}

/** The replica's `application_name`, under which the primary lists it in `pg_stat_replication`. */
export const REPLICA_NAME = 'failover-replica';

/**
 * A private PostgreSQL cluster (a server of its own, in a temporary folder, on a free port of
 * 127.0.0.1) run with the machine's server binaries: a primary made by initdb that streams its WAL
 * to a replica made by `pg_basebackup -R`, which the test can kill and promote.
 */
export class PostgresCluster {
  private constructor(
    private readonly binaries: string,
    /** The folder of the pair: both data folders and their logs. */
    private readonly folder: string,
    /** Its data folder and its log in `folder` are named after it. */
    readonly name: 'primary' | 'replica',
    readonly port: number,
  ) {}

  private get dataDir(): string {
    return join(this.folder, this.name);
  }

  private get logFile(): string {
    return join(this.folder, `${this.name}.log`);
  }

  /** The URL of `database` on this cluster, as the superuser `postgres` (trusted, no password). */
  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /**
   * Creates and starts a primary in a new temporary folder, with `wal_level = replica`, WAL
   * senders and a trusted replication entry for 127.0.0.1 in pg_hba.conf; `database` is created
   * on it. It replicates asynchronously until `requireSynchronousReplica()`.
   */
  static async startPrimary(database: string): Promise<PostgresCluster> {
    const binaries = findServerBinaries();
    if (!binaries) {
      throw new Error('PostgreSQL server binaries are not installed: check postgresClustersAvailable() first');
    }
    const folder = await mkdtemp(join(tmpdir(), 'idempotency-failover-'));
    const primary = new PostgresCluster(binaries, folder, 'primary', await freePort());
    try {
      if (runsAsRoot()) {
        const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' })));
        await chown(folder, uid, gid);
      }
      await primary.runTool('initdb', ['-D', primary.dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync']);
      await appendFile(join(primary.dataDir, 'pg_hba.conf'), 'host replication postgres 127.0.0.1/32 trust\n');
      await primary.configure(['wal_level = replica', 'max_wal_senders = 4']);
      await primary.start();
      await primary.query(`CREATE DATABASE ${database}`);
    } catch (error) {
      await primary.destroy();
      throw error;
    }
    return primary;
  }

  /**
   * Makes a streaming replica of this primary with `pg_basebackup -R` (its connection to the
   * primary under `application_name = REPLICA_NAME`), starts it on a port of its own, and waits
   * until the primary reports it streaming.
   */
  async startReplica(): Promise<PostgresCluster> {
    const replica = new PostgresCluster(this.binaries, this.folder, 'replica', await freePort());
    await this.runTool('pg_basebackup', [
      '-D',
      replica.dataDir,
      '-d',
      `host=127.0.0.1 port=${this.port} user=postgres application_name=${REPLICA_NAME}`,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
    ]);
    await replica.configure();
    await replica.start();
    await until(
      async () => (await this.query(`SELECT 1 FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'`, [REPLICA_NAME])).length === 1,
      'the replica streams from the primary',
    );
    return replica;
  }

  /**
   * Makes this primary replicate synchronously, once its replica streams: `synchronous_standby_names
   * = '*'` and `synchronous_commit = on`, so a commit returns only once the replica has flushed
   * it. Resolves when the primary reports the replica `sync`. (Set before the replica exists,
   * every commit would wait for it.)
   */
  async requireSynchronousReplica(): Promise<void> {
    await appendFile(join(this.dataDir, 'postgresql.conf'), "synchronous_standby_names = '*'\nsynchronous_commit = on\n");
    await this.query('SELECT pg_reload_conf()');
    await until(
      async () => (await this.query(`SELECT 1 FROM pg_stat_replication WHERE application_name = $1 AND sync_state = 'sync'`, [REPLICA_NAME])).length === 1,
      'the primary waits for its replica at each commit',
    );
  }

  /** `pg_ctl stop -m immediate`: the server dies at once, as on a crash, without a checkpoint or a goodbye to its replica. */
  async killImmediately(): Promise<void> {
    await this.runTool('pg_ctl', ['stop', '-D', this.dataDir, '-m', 'immediate', '-w']);
  }

  /** `pg_ctl promote`: the replica replays what it received, leaves recovery and accepts writes; resolves once it does. */
  async promote(): Promise<void> {
    await this.runTool('pg_ctl', ['promote', '-D', this.dataDir, '-w']);
  }

  /** Runs one statement on `database` through a connection of its own. */
  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = [], database = 'postgres'): Promise<T[]> {
    const client = new pg.Client({ connectionString: this.url(database), connectionTimeoutMillis: 10_000, query_timeout: 30_000 });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as T[];
    } finally {
      await client.end();
    }
  }

  /** Stops the server if it still runs, at once; `removeFolder` also deletes the pair's folder (call it on the primary last). */
  async destroy(removeFolder = true): Promise<void> {
    if (existsSync(join(this.dataDir, 'postmaster.pid'))) {
      await this.runTool('pg_ctl', ['stop', '-D', this.dataDir, '-m', 'immediate', '-w']).catch(() => undefined);
    }
    if (removeFolder) {
      await rm(this.folder, { recursive: true, force: true });
    }
  }

  /** What the server logged so far, for failure messages. */
  async log(): Promise<string> {
    return readFile(this.logFile, 'utf8').catch(() => '');
  }

  /** Settings appended to postgresql.conf, where a later line wins over an earlier one. */
  private async configure(settings: string[] = []): Promise<void> {
    const own = [`port = ${this.port}`, "listen_addresses = '127.0.0.1'", `unix_socket_directories = '${this.folder}'`];
    await appendFile(join(this.dataDir, 'postgresql.conf'), `\n${[...own, ...settings].join('\n')}\n`);
  }

  private async start(): Promise<void> {
    try {
      await this.runTool('pg_ctl', ['start', '-D', this.dataDir, '-l', this.logFile, '-w', '-t', '30']);
    } catch (error) {
      throw new Error(`the ${this.name} cluster did not start:\n${await this.log()}`, { cause: error });
    }
  }

  /** Runs one of the server binaries, as the `postgres` user when this process is root. */
  private async runTool(tool: string, args: string[]): Promise<void> {
    const binary = join(this.binaries, tool);
    const [command, commandArgs] = runsAsRoot() ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];
    try {
      await run(command, commandArgs, { timeout: 60_000 });
    } catch (error) {
      const { stderr, stdout } = error as { stderr?: string; stdout?: string };
      throw new Error(`${tool} ${args.join(' ')} failed: ${stderr || stdout || (error as Error).message}`, { cause: error });
    }
  }
}
