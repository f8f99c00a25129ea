import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { until } from './test-database.js';

const BUILT_DEMO = resolve('dist/apps/demo-api/src/main.js');

/** A free TCP port on 127.0.0.1. */
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

/** The built demo running as a real child process, so it can be killed with SIGKILL. */
export interface DemoProcess {
  readonly baseUrl: string;
  readonly child: ChildProcess;
  readonly output: () => string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** The built demo (dist/apps/demo-api), ready once it answers `GET /accounts/ping`. */
export function startDemoProcess(env: Record<string, string>): Promise<DemoProcess> {
  return startAppProcess(BUILT_DEMO, env, '/accounts/ping');
}

/**
 * A built Nest application (`entry`, a JavaScript file that listens on `PORT`) as a child process,
 * ready once it listens on its port and `GET readinessPath` gets an HTTP answer.
 */
export async function startAppProcess(entry: string, env: Record<string, string>, readinessPath: string): Promise<DemoProcess> {
  if (!existsSync(entry)) {
    throw new Error(`${entry} is missing: run 'npm run build' first ('npm test' does)`);
  }
  // The port was free when picked; another process (a suite of a jest run beside this one) can
  // take it before the child listens. Then the child exits, and starts again on another port.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreePort(entry, env, readinessPath);
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt === 3) {
        throw error;
      }
    }
  }
}

/** The child could not listen: the port it was given was taken in the meantime. */
class PortTaken extends Error {}

async function startOnFreePort(entry: string, env: Record<string, string>, readinessPath: string): Promise<DemoProcess> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  await until(
    async () => {
      if (child.exitCode !== null) {
        const Failure = output.includes(`EADDRINUSE: address already in use 127.0.0.1:${port}`) ? PortTaken : Error;
        throw new Failure(`${entry} exited with ${child.exitCode}:\n${output}`);
      }
      // Another process (an app of a suite beside this one, listening on port 0) may hold the port
      // the child was given: its answer must not pass for the child's.
      return (await listensOn(child, port)) && fetch(`${baseUrl}${readinessPath}`).then(
        () => true,
        () => false,
      );
    },
    `${entry} listens`,
    30_000,
  );
  return {
    baseUrl,
    child,
    output: () => output,
    kill: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
      }
      await exited;
    },
  };
}

/** Whether `child` holds the listening socket of `port` (Linux: the socket's inode in /proc/net/tcp among the child's open files). */
async function listensOn(child: ChildProcess, port: number): Promise<boolean> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const tables = await Promise.all(['/proc/net/tcp', '/proc/net/tcp6'].map((table) => readFile(table, 'utf8').catch(() => '')));
  const listening = new Set(
    tables
      .flatMap((table) => table.split('\n').slice(1))
      .map((line) => line.trim().split(/\s+/))
      // local_address is <ip>:<port> in hex; state 0A is LISTEN; the 10th field is the socket's inode.
      .filter((fields) => fields.length > 9 && fields[1].endsWith(`:${hexPort}`) && fields[3] === '0A')
      .map((fields) => `socket:[${fields[9]}]`),
  );
  if (listening.size === 0) {
    return false;
  }
  const files = await readdir(`/proc/${child.pid}/fd`).catch(() => []);
  const targets = await Promise.all(files.map((fd) => readlink(`/proc/${child.pid}/fd/${fd}`).catch(() => '')));
  return targets.some((target) => listening.has(target));
}
