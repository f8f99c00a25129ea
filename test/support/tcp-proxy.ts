import { createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy to a broker that the test can cut: `holdClientBytes()` stops forwarding what the
 * client sends (an ack, say) while the connection stays open, as a network partition would.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private holding = false;
  private server: Server;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = new (client.constructor as typeof Socket)();
      upstream.connect(this.targetPort, this.targetHost);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => {
          this.sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
      }
      client.on('data', (chunk) => {
        if (!this.holding) upstream.write(chunk);
      });
      upstream.on('data', (chunk) => client.write(chunk));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  holdClientBytes(): void {
    this.holding = true;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
