import { IdempotencyTransactionAbortedError } from '../errors/idempotency.errors.js';
import { MARIADB_DUPLICATE_ENTRY, MARIADB_LOCK_WAIT_TIMEOUT, mariaDbErrno } from '../dialects/mariadb/mariadb-errors.js';
import type { IsolationLevel } from '../options/handler-values.js';
import type { Claimant, DataLayerHost, StatementResult } from './data-layer.js';
import { SqlClaimConnection } from './sql-claim-connection.js';
import { OWN_STATEMENT_OPTIONS } from './mariadb-own-statements.js';

type Callback = (error: Error | null, ...results: unknown[]) => void;
type Send = (this: unknown, ...args: unknown[]) => unknown;

/**
 * A pooled connection to MariaDB, as far as a claim uses it: mysql2's core API (a `PoolConnection`),
 * the `mariadb` connector's (`mariadb/callback`'s, or its promise API's, whose methods answer promises).
 * @internal
 */
export interface MariaDbConnection {
  query(sql: unknown, ...rest: unknown[]): unknown;
  execute(sql: unknown, ...rest: unknown[]): unknown;
  /** The `mariadb` connector's: one statement for many sets of values. */
  batch?(sql: unknown, ...rest: unknown[]): unknown;
  escape(value: string): string;
  release(): unknown;
  destroy(): unknown;
}

/**
 * How a claim talks to its connection's driver.
 * @internal
 */
export interface MariaDbDriver {
  /** Whether the connection's methods answer promises (the `mariadb` connector's promise API) rather than call back (mysql2, `mariadb/callback`). */
  readonly promises: boolean;
  /** Whether one query may carry several statements (`multipleStatements` of the pool). */
  readonly multipleStatements: boolean;
  /**
   * Whether the connection's other methods run on the lease (mysql2's: `promise()` wraps the lease,
   * so what it sends goes through the claim) or on the connection itself (the `mariadb` connector's,
   * which read private fields of the connection).
   */
  readonly methodsOnLease: boolean;
}

/** The connections a claim lent, which their pool's release leaves to the claim. */
const LEASES = new WeakSet<object>();

/** The client capability of several statements a query (the `mariadb` connector's `multipleStatements`). */
const MULTI_STATEMENTS = 1n << 16n;

/**
 * Whether `connection` (mysql2's or the `mariadb` connector's) may carry several statements a
 * query: its pool or connection was created with `multipleStatements`.
 * @internal
 */
export function takesSeveralStatements(connection: object): boolean {
  const { config, info } = connection as { config?: { multipleStatements?: boolean }; info?: { clientCapabilities?: bigint } | null };
  return config?.multipleStatements === true || ((info?.clientCapabilities ?? 0n) & MULTI_STATEMENTS) !== 0n;
}

/** The methods of a connection that end or start a transaction, each the statement it sends. */
const TRANSACTION_METHODS = new Map<string | symbol, string>([
  ['beginTransaction', 'START TRANSACTION'],
  ['commit', 'COMMIT'],
  ['rollback', 'ROLLBACK'],
]);

/** The level of the next transaction, which MariaDB refuses to set inside one (1568): TypeORM and Drizzle send it before a transaction of theirs given a level. */
const SET_ISOLATION = /^\s*set\s+transaction\s+isolation\s+level\s+(read\s+uncommitted|read\s+committed|repeatable\s+read|serializable)\s*;?\s*$/i;

/** Errors after which MariaDB keeps the transaction open: only the statement was rolled back. */
const STATEMENT_ONLY = new Set([MARIADB_DUPLICATE_ENTRY, MARIADB_LOCK_WAIT_TIMEOUT]);

/**
 * The claim's transaction on one connection to MariaDB, which the layer's pool hands out again while
 * the handler runs (see `Mysql2PoolDataLayer`, `MariaDbPoolDataLayer`, `MikroOrmDataLayer`). The
 * protocol is the one every layer shares; what MariaDB does otherwise:
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
  readonly handle: MariaDbConnection;
  override readonly readsVoid = false;
  private status: 'I' | 'T' | 'E' = 'I';

  /**
   * @param owner The pool that lent `pooled`, which hands out leases of it while the claim is open.
   * @param driver How `pooled` answers, and whether it takes several statements a query.
   * @param giveBack Gives `pooled` back to `owner` (`broken`: destroyed instead, its transaction state unknown).
   * @param manager TypeORM's entity manager of the data source on `owner`, which `IdempotencyContext.manager` answers: its writes go through the pool, so they join the claim.
   */
  constructor(
    readonly owner: object,
    private readonly pooled: MariaDbConnection,
    private readonly driver: MariaDbDriver,
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

  /** Whether `connection` is a lease of a claim, which its pool must not take back. */
  static isLease(connection: unknown): boolean {
    return typeof connection === 'object' && connection !== null && LEASES.has(connection);
  }

  /**
   * The connection for one checkout from the pool: the claim's, whose `release()` leaves it to the
   * claim, and whose statements go through the claim: transaction control (`beginTransaction()`,
   * `commit()`, `rollback()`, or their statements) becomes savepoints, and nothing is sent once the
   * transaction is lost.
   */
  lease(): MariaDbConnection {
    const pooled = this.pooled;
    const releaseLease = this.driver.promises ? () => Promise.resolve() : () => undefined;
    const lease: MariaDbConnection = new Proxy(pooled, {
      get: (target, property) => {
        if (property === 'query' || property === 'execute' || property === 'batch') {
          return (...args: unknown[]) => this.sendForHandler(target[property] as Send, args, lease);
        }
        const control = TRANSACTION_METHODS.get(property);
        if (control !== undefined) {
          return (...args: unknown[]) => this.sendForHandler(target.query as Send, [control, ...args], lease);
        }
        // The `mariadb` connector's pool lends its connections with `end()` and `close()` as `release()`.
        if (property === 'release' || property === 'end' || property === 'close') {
          return releaseLease;
        }
        if (property === 'manager' && this.manager !== undefined) {
          return this.manager;
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' && !this.driver.methodsOnLease ? (value as Send).bind(target) : value;
      },
    });
    LEASES.add(lease);
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
      if (this.driver.multipleStatements && statements.length > 1) {
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

  /** A statement of the handler's, through a lease: refused once the transaction is lost, its transaction control made savepoints. */
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
      if (this.driver.promises) {
        return Promise.reject(error);
      }
      throw error;
    }
    const sendAs = (sql: string | undefined): unknown => {
      const sent = sql === undefined ? [...args] : [typeof first === 'string' ? sql : { ...(first as object), sql }, ...args.slice(1)];
      if (callback) {
        sent[sent.length - 1] = (error: Error | null, ...results: unknown[]) => {
          if (error && this.isOpen) {
            void this.afterError(error).then(() => callback(error, ...results));
            return;
          }
          callback(error, ...results);
        };
        return method.apply(this.pooled, sent);
      }
      const answer = method.apply(this.pooled, sent);
      // The connector's promise: a failure tells whether the transaction survived it before the handler hears of it.
      return answer instanceof Promise
        ? answer.catch(async (error: unknown) => {
            await this.afterError(error);
            throw error;
          })
        : answer;
    };
    if (typeof rewritten === 'object') {
      if (this.driver.promises) {
        return rewritten.then(sendAs);
      }
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
    const query = { sql: statement, ...OWN_STATEMENT_OPTIONS };
    return this.driver.promises ? (this.pooled.query(query) as Promise<unknown>) : calledBack((done) => this.pooled.query(query, done));
  }
}

/**
 * A call of a callback API (mysql2's, `mariadb/callback`'s) as a promise of its first result.
 * @internal
 */
export function calledBack<T = unknown>(call: (done: (error: Error | null, result: T) => void) => unknown): Promise<T> {
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
