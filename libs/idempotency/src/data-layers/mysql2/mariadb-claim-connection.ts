import { IdempotencyTransactionAbortedError } from '../../errors/idempotency.errors.js';
import { MARIADB_DUPLICATE_ENTRY, MARIADB_LOCK_WAIT_TIMEOUT, mariaDbErrno } from '../../dialects/mariadb/mariadb-errors.js';
import type { IsolationLevel } from '../../options/handler-values.js';
import type { Claimant, DataLayerHost, StatementResult } from '../data-layer.js';
import { SqlClaimConnection } from '../sql-claim-connection.js';

type Callback = (error: Error | null, ...results: unknown[]) => void;
type Send = (this: unknown, ...args: unknown[]) => unknown;

/**
 * A connection of mysql2's core API (a `PoolConnection`), as far as a claim uses it.
 * @internal
 */
export interface Mysql2Connection {
  query(sql: unknown, ...rest: unknown[]): unknown;
  execute(sql: unknown, ...rest: unknown[]): unknown;
  escape(value: string): string;
  release(): void;
  destroy(): void;
  readonly config: { readonly multipleStatements?: boolean };
}

/** The level of the next transaction, which MariaDB refuses to set inside one (1568): TypeORM and Drizzle send it before a transaction of theirs given a level. */
const SET_ISOLATION = /^\s*set\s+transaction\s+isolation\s+level\s+(read\s+uncommitted|read\s+committed|repeatable\s+read|serializable)\s*;?\s*$/i;

/** Errors after which MariaDB keeps the transaction open: only the statement was rolled back. */
const STATEMENT_ONLY = new Set([MARIADB_DUPLICATE_ENTRY, MARIADB_LOCK_WAIT_TIMEOUT]);

/**
 * The claim's transaction on one mysql2 connection to MariaDB, which the pool hands out again while
 * the handler runs (see `Mysql2PoolDataLayer`). The protocol is the one every layer shares; what
 * MariaDB does otherwise:
 * - the BEGIN is `SET TRANSACTION ISOLATION LEVEL ...; START TRANSACTION`, sent with the claim in
 *   one round trip where the pool allows several statements a query (`multipleStatements`), else
 *   one statement after the other;
 * - a deadlock (1213), or any error after which the connection is no longer in a transaction, has
 *   rolled back the whole transaction, and MariaDB would run the next statement on its own,
 *   committed at once: every later statement of the handler is refused instead, and the claim
 *   cannot commit (`IdempotencyTransactionAbortedError`), so the redelivery runs the handler again
 *   with nothing of this one kept;
 * - a `SET TRANSACTION ISOLATION LEVEL` of the handler's (sent before a transaction of its own,
 *   which becomes a savepoint) is not sent, since MariaDB refuses it inside a transaction: a level
 *   no stronger than the claim's is what the savepoint has anyway, a stronger one is refused.
 * @internal
 */
export class MariaDbClaimConnection extends SqlClaimConnection {
  /** The lease of the handler's own statements (`pool.query()`, `IdempotencyContext`). */
  readonly handle: Mysql2Connection;
  override readonly readsVoid = false;
  private status: 'I' | 'T' | 'E' = 'I';

  /**
   * @param owner The pool that lent `pooled`, which hands out leases of it while the claim is open.
   * @param giveBack Gives `pooled` back to `owner` (`broken`: destroyed instead, its transaction state unknown).
   * @param manager TypeORM's entity manager of the data source on `owner`, which `IdempotencyContext.manager` answers: its writes go through the pool, so they join the claim.
   */
  constructor(
    readonly owner: object,
    private readonly pooled: Mysql2Connection,
    claimant: Claimant,
    waitMs: number,
    private readonly giveBack: (broken: boolean) => void,
    private readonly manager?: unknown,
  ) {
    super(
      {
        query: () => Promise.reject(new Error('a claim on MariaDB sends its statements itself')),
        escapeLiteral: (value) => pooled.escape(value),
        getTransactionStatus: () => this.status,
      },
      claimant,
      waitMs,
    );
    this.handle = this.lease();
  }

  /** The claim in flight in the caller's context, when it is one of these and its transaction is open. */
  static inFlight(storage: DataLayerHost['storage']): MariaDbClaimConnection | undefined {
    const transaction = storage.getStore()?.transaction;
    return transaction instanceof MariaDbClaimConnection && transaction.isOpen ? transaction : undefined;
  }

  /**
   * The connection for one checkout from the pool: the claim's, whose `release()` leaves it to the
   * claim, and whose statements (`beginTransaction()` and `commit()` send theirs through `query`)
   * go through the claim: transaction control becomes savepoints, and nothing is sent once the
   * transaction is lost.
   */
  lease(): Mysql2Connection {
    const pooled = this.pooled;
    const lease: Mysql2Connection = new Proxy(pooled, {
      get: (target, property, receiver) => {
        if (property === 'query' || property === 'execute') {
          return (...args: unknown[]) => this.sendForHandler(target[property] as Send, args, lease);
        }
        if (property === 'release') {
          return () => undefined;
        }
        if (property === 'manager' && this.manager !== undefined) {
          return this.manager;
        }
        // Unbound: a method of mysql2's that sends through `this.query` (beginTransaction, commit) sends through the lease.
        return Reflect.get(target, property, receiver) as unknown;
      },
    });
    return lease;
  }

  protected override beginStatements(isolationLevel: IsolationLevel): string[] {
    return [`SET TRANSACTION ISOLATION LEVEL ${isolationLevel}`, 'START TRANSACTION'];
  }

  /** MariaDB's COMMIT always commits what is open; that the transaction is the claim's was checked before it. */
  protected override committed(): boolean {
    return true;
  }

  protected defaultIsolationLevel(): IsolationLevel | undefined {
    return undefined;
  }

  protected async release(): Promise<void> {
    this.giveBack(this.status !== 'I');
  }

  protected marked(): void {
    // The connection is the claim's alone: nothing else to tell.
  }

  /** The claim's own statements, in one query where the pool allows several statements a query, else one after the other. */
  protected override async send(statements: string[]): Promise<StatementResult[]> {
    const answers: unknown[] = [];
    try {
      if (this.pooled.config.multipleStatements && statements.length > 1) {
        answers.push(...((await this.raw(statements.join(';\n'))) as unknown[]));
      } else {
        for (const statement of statements) {
          answers.push(await this.raw(statement));
        }
      }
    } catch (error) {
      await this.afterError(error);
      throw error;
    }
    this.status = /^(COMMIT|ROLLBACK)$/.test(statements[statements.length - 1]) ? 'I' : 'T';
    return answers.map(toStatementResult);
  }

  /** A statement of the handler's, through `lease`: refused once the transaction is lost, its transaction control made savepoints. */
  private sendForHandler(method: Send, args: unknown[], lease: object): unknown {
    const callback = typeof args[args.length - 1] === 'function' ? (args[args.length - 1] as Callback) : undefined;
    const [first] = args;
    const text = typeof first === 'string' ? first : (first as { sql?: unknown } | null)?.sql;
    let rewritten: string | Promise<string> | undefined;
    try {
      if (this.isOpen && this.status === 'E') {
        throw new IdempotencyTransactionAbortedError(this.claimant.consumer, this.claimant.key);
      }
      rewritten = typeof text === 'string' ? this.forHandler(text, lease) : undefined;
    } catch (error) {
      if (callback) {
        queueMicrotask(() => callback(error as Error));
        return undefined;
      }
      throw error;
    }
    const sendAs = (sql: string | undefined) => {
      const sent = sql === undefined ? [...args] : [typeof first === 'string' ? sql : { ...(first as object), sql }, ...args.slice(1)];
      if (callback) {
        sent[sent.length - 1] = (error: Error | null, ...results: unknown[]) => {
          if (error && this.isOpen) {
            void this.afterError(error).then(() => callback(error, ...results));
            return;
          }
          callback(error, ...results);
        };
      }
      return method.apply(this.pooled, sent);
    };
    if (typeof rewritten === 'object') {
      // Not the Query itself as the promise's value: mysql2's Query is a thenable that throws when awaited.
      rewritten.then(
        (sql) => void sendAs(sql),
        (error: unknown) => callback?.(error as Error),
      );
      return undefined;
    }
    return sendAs(rewritten);
  }

  /** What to send for the handler's `text` while the claim is open: transaction control made savepoints, a level for the next transaction checked and dropped. */
  private forHandler(text: string, lease: object): string | Promise<string> | undefined {
    const level = this.isOpen ? SET_ISOLATION.exec(text)?.[1] : undefined;
    if (level === undefined) {
      return this.inClaim(text, lease);
    }
    this.refuseStrongerIsolation(level.toUpperCase().replace(/\s+/g, ' ') as IsolationLevel);
    return 'DO 0';
  }

  /** After a failed statement: whether the transaction survived it (a duplicate entry, a lock wait timeout) or was rolled back. */
  private async afterError(error: unknown): Promise<void> {
    if (!this.isOpen) {
      return;
    }
    const errno = mariaDbErrno(error);
    if (errno !== undefined && STATEMENT_ONLY.has(errno)) {
      return;
    }
    try {
      const [row] = (await this.raw('SELECT @@in_transaction AS open')) as { open: number }[];
      this.status = row.open === 1 ? 'T' : 'E';
    } catch {
      this.status = 'E';
    }
  }

  private raw(statement: string): Promise<unknown> {
    return mysql2Call((done) => this.pooled.query(statement, done));
  }
}

/**
 * A call of mysql2's callback API as a promise of its first result.
 * @internal
 */
export function mysql2Call<T = unknown>(call: (done: (error: Error | null, result: T) => void) => unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    call((error, result) => (error ? reject(error) : resolve(result)));
  });
}

function toStatementResult(answer: unknown): StatementResult {
  if (Array.isArray(answer)) {
    return { command: 'SELECT', rowCount: answer.length, rows: answer };
  }
  return { command: '', rowCount: (answer as { affectedRows?: number }).affectedRows ?? null, rows: [] };
}
