import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** A charge the provider made. */
export interface Charge {
  id: string;
  order: string;
  cents: number;
}

/**
 * A payment provider as real ones behave (Stripe-style): `POST /charges` with an `Idempotency-Key`
 * header makes a charge once per key, and answers a retried call with the same key with the
 * first charge. It counts calls and charges per key. `GET /hold/:name` answers only once the test
 * releases that name, so a handler can be held between its remote call and its completion.
 */
export class PaymentProvider {
  readonly charges = new Map<string, Charge>();
  readonly calls = new Map<string, number>();
  private readonly held = new Map<string, { released: boolean; waiting: ServerResponse[] }>();
  private server: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => void this.answer(request, response));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  /** Charges made under `key`'s idempotency key, whatever the number of calls. */
  chargesFor(key: string): number {
    return this.charges.has(key) ? 1 : 0;
  }

  /** Holds every `GET /hold/:name` until `release(name)`. */
  hold(name: string): void {
    this.held.set(name, { released: false, waiting: [] });
  }

  /** Answers the held calls of `name`, and those to come. */
  release(name: string): void {
    const gate = this.held.get(name) ?? { released: true, waiting: [] };
    gate.released = true;
    gate.waiting.splice(0).forEach((response) => response.end('{}'));
    this.held.set(name, gate);
  }

  /** Calls waiting at the gate `name`. */
  waitingAt(name: string): number {
    return this.held.get(name)?.waiting.length ?? 0;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) {
      chunks.push(chunk as Buffer);
    }
    response.setHeader('content-type', 'application/json');
    const gate = /^\/hold\/(.+)$/.exec(request.url ?? '')?.[1];
    if (gate !== undefined) {
      const held = this.held.get(gate);
      if (held && !held.released) {
        held.waiting.push(response);
      } else {
        response.end('{}');
      }
      return;
    }
    const key = String(request.headers['idempotency-key'] ?? '');
    if (request.method !== 'POST' || request.url !== '/charges' || key === '') {
      response.statusCode = 400;
      response.end('{"error":"POST /charges with an Idempotency-Key"}');
      return;
    }
    this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
    let charge = this.charges.get(key);
    if (!charge) {
      const { order, cents } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { order: string; cents: number };
      charge = { id: `ch_${this.charges.size + 1}`, order, cents };
      this.charges.set(key, charge);
    }
    response.end(JSON.stringify(charge));
  }
}
