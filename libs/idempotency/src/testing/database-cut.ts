import { createServer, type Server, Socket } from 'node:net';

/**
 * A TCP proxy in front of the database that a check can take away and bring back, as an outage
 * does: `refuse()` cuts every open connection and refuses new ones until `accept()`.
 * @internal
 */
export class DatabaseCut {
  private readonly sockets = new Set<Socket>();
  private refusing = false;

  private constructor(
    private readonly server: Server,
    private readonly target: URL,
  ) {
    server.on('connection', (client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const upstream = new Socket();
      upstream.connect(Number(target.port || 5432), target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => {
          this.sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  /** A proxy to the database of `databaseUrl`, listening on a free port of 127.0.0.1. */
  static async start(databaseUrl: string): Promise<DatabaseCut> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new DatabaseCut(server, new URL(databaseUrl));
  }

  /** `databaseUrl` of the database through the proxy. */
  get url(): string {
    const proxied = new URL(this.target);
    proxied.hostname = '127.0.0.1';
    proxied.port = String((this.server.address() as { port: number }).port);
    return proxied.toString();
  }

  refuse(): void {
    this.refusing = true;
    this.sockets.forEach((socket) => socket.destroy());
  }

  accept(): void {
    this.refusing = false;
  }

  async close(): Promise<void> {
    this.sockets.forEach((socket) => socket.destroy());
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
