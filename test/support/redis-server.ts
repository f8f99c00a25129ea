import { type ChildProcess, spawn } from 'node:child_process';
import { createClient } from 'redis';
import { freePort } from './demo-process.js';
import { until } from './test-database.js';

/** How the private Redis keeps its data: not at all, or in an append-only file synced every second. */
export type RedisPersistence = 'none' | 'appendonly-everysec';

/** A private `redis-server` on a port of its own, which a test can kill and start again on the same data. */
export class RedisServer {
  private child: ChildProcess | undefined;
  port = 0;

  constructor(
    private readonly persistence: RedisPersistence,
    private readonly dir: string,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it (again, on the same port and folder after `kill()`), and waits until it answers. */
  async start(): Promise<void> {
    this.port ||= await freePort();
    const persistence =
      this.persistence === 'none' ? ['--save', '', '--appendonly', 'no'] : ['--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec'];
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, ...persistence], { stdio: 'ignore' });
    await until(async () => {
      const client = createClient({ url: this.url, socket: { reconnectStrategy: false } });
      try {
        await client.connect();
        return (await client.ping()) === 'PONG';
      } catch {
        return false;
      } finally {
        await client.close().catch(() => undefined);
      }
    }, `redis-server on port ${this.port} answers`);
  }

  /** Kills it with SIGKILL, as a crash would: what it had not written out is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      return;
    }
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }
}
