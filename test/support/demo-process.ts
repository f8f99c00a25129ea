import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
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

export async function startDemoProcess(env: Record<string, string>): Promise<DemoProcess> {
  if (!existsSync(BUILT_DEMO)) {
    throw new Error(`${BUILT_DEMO} is missing: run 'npm run build' first ('npm test' does)`);
  }
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [BUILT_DEMO], {
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
        throw new Error(`the demo exited with ${child.exitCode}:\n${output}`);
      }
      return fetch(`${baseUrl}/accounts/ping`).then(
        (response) => response.ok,
        () => false,
      );
    },
    'the demo process listens',
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
