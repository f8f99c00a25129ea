import type { IsolationLevel } from '../options/handler-values.js';
import type { Claimant, DataLayerHost, PgPoolClient } from './data-layer.js';
import { SqlClaimConnection, type ClaimClient } from './sql-claim-connection.js';

type Query = (...args: unknown[]) => unknown;

/** The clients a claim lent, which their pool's release leaves to the claim. */
const LEASES = new WeakSet<object>();

/**
 * The claim's transaction on a node-postgres client that a layer's pool lent (a `pg` Pool's, or
 * knex's under MikroORM), which the layer hands out again while the handler runs. Each checkout
 * from the pool gets a lease of it (`lease()`): the same client, except that a transaction opened
 * on it is a savepoint, taken while no other lease's transaction is open, a COMMIT or ROLLBACK of
 * the claim's own transaction is refused, and `release()` leaves the client to the claim.
 * @internal
 */
export class JoinedClaimConnection extends SqlClaimConnection {
  /** The lease of the handler's own statements (`pool.query()`, `IdempotencyContext`). */
  readonly handle: PgPoolClient;

  /**
   * @param owner The pool that lent `pooled`, which hands out leases of it while the claim is open.
   * @param waitMs How long a transaction of the handler waits for another one's to end.
   * @param giveBack Gives `pooled` back to `owner`; `broken`: it is left in a transaction (its connection failed), not to be reused.
   */
  constructor(
    readonly owner: object,
    private readonly pooled: ClaimClient,
    claimant: Claimant,
    waitMs: number,
    private readonly giveBack: (broken: boolean) => Promise<void> | void,
  ) {
    super(pooled, claimant, waitMs);
    this.handle = this.lease();
  }

  /** The claim in flight in the caller's context, when its connection is one a layer's pool lent and its transaction is open. */
  static inFlight(storage: DataLayerHost['storage']): JoinedClaimConnection | undefined {
    const transaction = storage.getStore()?.transaction;
    return transaction instanceof JoinedClaimConnection && transaction.isOpen ? transaction : undefined;
  }

  /** Whether `client` is a lease of a claim, which its pool must not take back. */
  static isLease(client: unknown): boolean {
    return typeof client === 'object' && client !== null && LEASES.has(client);
  }

  /** A client for one checkout from the pool: the claim's, with transactions of its own. */
  lease(): PgPoolClient {
    const pooled = this.pooled;
    const release = () => undefined;
    const lease: PgPoolClient = new Proxy(pooled as unknown as PgPoolClient, {
      get: (target, property) => {
        if (property === 'query') return query;
        if (property === 'release') return release;
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? (value as Query).bind(target) : value;
      },
    });
    const query = (...args: unknown[]) => this.query(args, lease);
    LEASES.add(lease);
    return lease;
  }

  protected defaultIsolationLevel(): IsolationLevel | undefined {
    return undefined;
  }

  /** Gives the client back; one left in a transaction (its connection failed) is discarded, not reused. */
  protected async release(): Promise<void> {
    await this.giveBack(this.client.getTransactionStatus() !== 'I');
  }

  protected marked(): void {
    // The client is the claim's alone: nothing else to tell.
  }

  /** A statement of the handler's layer through `lease`: transaction control becomes savepoints; the rest goes as sent. */
  private query(args: unknown[], lease: object): unknown {
    const [first] = args;
    const text = typeof first === 'string' ? first : (first as { text?: unknown } | null)?.text;
    const callback = args[args.length - 1];
    let rewritten: string | Promise<string> | undefined;
    try {
      rewritten = typeof text === 'string' ? this.inClaim(text, lease) : undefined;
    } catch (error) {
      if (typeof callback === 'function') {
        queueMicrotask(() => (callback as (error: unknown) => void)(error));
        return undefined;
      }
      return Promise.reject(error);
    }
    const pooled = this.pooled;
    const send = (sql: string | undefined) =>
      (pooled.query as Query).apply(pooled, sql === undefined ? args : [typeof first === 'string' ? sql : { ...(first as object), text: sql }, ...args.slice(1)]) as Promise<unknown>;
    if (typeof callback === 'function' || typeof (first as { submit?: unknown } | null)?.submit === 'function') {
      // A callback or a submittable (a cursor, a stream) answers no promise to wait for: sent as it comes.
      if (typeof rewritten !== 'object') {
        return send(rewritten);
      }
      rewritten.then(send, (error: unknown) => (typeof callback === 'function' ? (callback as (error: unknown) => void)(error) : undefined));
      return undefined;
    }
    return typeof rewritten === 'object' ? rewritten.then((sql) => this.inTurn(() => send(sql))) : this.inTurn(() => send(rewritten));
  }
}
