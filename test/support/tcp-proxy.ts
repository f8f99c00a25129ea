import { createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy to a broker or a database that the test can cut: `holdClientBytes()` stops
 * forwarding what the client sends (an ack, say) while the connection stays open, as a network
 * partition would, and `holdServerBytes()` what the server sends (a publish's confirmation); `dropConnections()` cuts the connections, as a broker restart would;
 * `refuse()` and `accept()` take the server away and bring it back, as an outage does;
 * `retarget(port)` moves the address to another server, as a failover to a promoted replica does.
 * `openConnections()` counts the clients' connections still open.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private readonly clients = new Set<Socket>();
  private holding = false;
  private holdingServer = false;
  private refusing = false;
  private server: Server;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private targetPort: number,
  ) {}

  /**
   * A proxy to the PostgreSQL server of `url`. A suite that cuts the database under a claim says so
   * by this name, which test/variables.spec.ts reads: the loss surfaces through the data layer.
   */
  static toDatabase(url: string): TcpProxy {
    const { hostname, port } = new URL(url);
    return new TcpProxy(hostname, Number(port || 5432));
  }

  async start(): Promise<void> {
    this.server = createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      this.clients.add(client);
      client.on('close', () => this.clients.delete(client));
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
      upstream.on('data', (chunk) => {
        if (!this.holdingServer) client.write(chunk);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** Cuts every open connection, as a broker restart does; new connections are still accepted. */
  dropConnections(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  /** Cuts every open connection and refuses new ones until `accept()`, as a server that is down does. */
  refuse(): void {
    this.refusing = true;
    this.dropConnections();
  }

  /**
   * Sends new connections to `port` of the same host from now on, and cuts the open ones, as a
   * virtual IP or a DNS name moved to a promoted replica does: clients must reconnect to reach it.
   */
  retarget(port: number): void {
    this.targetPort = port;
    this.dropConnections();
  }

  /** Accepts connections again. */
  accept(): void {
    this.refusing = false;
  }

  /** The proxy's address in place of the target's in `url`. */
  url(url: string): string {
    const proxied = new URL(url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(this.port);
    return proxied.toString();
  }

  /** The clients' connections through the proxy that are still open. */
  openConnections(): number {
    return this.clients.size;
  }

  holdClientBytes(): void {
    this.holding = true;
  }

  /**
   * Stops forwarding what the server sends (a broker's publish confirmations, say) while what the
   * client sends still reaches it and the connections stay open: the client's messages arrive, and
   * it never learns that they did.
   */
  holdServerBytes(): void {
    this.holdingServer = true;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
