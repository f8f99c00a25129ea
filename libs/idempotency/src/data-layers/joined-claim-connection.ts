import type { IsolationLevel } from '../options/handler-values.js';
import type { Claimant, DataLayerHost, PgPoolClient } from './data-layer.js';
import { PgClaimConnection, type PostgresClient } from './pg-claim-connection.js';

type Query = (...args: unknown[]) => unknown;

/**
 * The claim's transaction on a node-postgres client that a layer's pool lent (a `pg` Pool's, or
 * knex's under MikroORM), which the layer hands out again while the handler runs. The handler and
 * the layer get `handle`: the same client, except that a transaction opened on it is a savepoint,
 * a COMMIT or ROLLBACK of the claim's own transaction is refused, and `release()` leaves the
 * client to the claim.
 * @internal
 */
export class JoinedClaimConnection extends PgClaimConnection {
  readonly handle: PgPoolClient;

  /**
   * @param owner The pool that lent `pooled`, which hands out `handle` while the claim is open.
   * @param giveBack Gives `pooled` back to `owner`; `broken`: it is left in a transaction (its connection failed), not to be reused.
   */
  constructor(
    readonly owner: object,
    private readonly pooled: PostgresClient,
    claimant: Claimant,
    private readonly giveBack: (broken: boolean) => Promise<void> | void,
  ) {
    super(pooled, claimant);
    this.handle = this.joinedClient();
  }

  /** The claim in flight in the caller's context, when its connection is one a layer's pool lent and its transaction is open. */
  static inFlight(storage: DataLayerHost['storage']): JoinedClaimConnection | undefined {
    const transaction = storage.getStore()?.transaction;
    return transaction instanceof JoinedClaimConnection && transaction.isOpen ? transaction : undefined;
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

  private joinedClient(): PgPoolClient {
    const pooled = this.pooled;
    const query = (...args: unknown[]) => this.query(args);
    const release = () => undefined;
    return new Proxy(pooled as unknown as PgPoolClient, {
      get(target, property) {
        if (property === 'query') return query;
        if (property === 'release') return release;
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? (value as Query).bind(target) : value;
      },
    });
  }

  /** A statement of the handler's layer: transaction control becomes savepoints; the rest goes as sent. */
  private query(args: unknown[]): unknown {
    const [first] = args;
    const text = typeof first === 'string' ? first : (first as { text?: unknown } | null)?.text;
    let rewritten: string | undefined;
    try {
      rewritten = typeof text === 'string' ? this.inClaim(text) : undefined;
    } catch (error) {
      const callback = args[args.length - 1];
      if (typeof callback === 'function') {
        queueMicrotask(() => (callback as (error: unknown) => void)(error));
        return undefined;
      }
      return Promise.reject(error);
    }
    if (rewritten === undefined) {
      return (this.pooled.query as Query)(...args);
    }
    const sent = typeof first === 'string' ? rewritten : { ...(first as object), text: rewritten };
    return (this.pooled.query as Query)(sent, ...args.slice(1));
  }
}
