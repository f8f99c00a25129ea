import type { InjectionToken } from '@nestjs/common';
import type { Knex } from 'knex';
import {
  type Claimant,
  type ClaimConnection,
  type DataLayerHost,
  type IdempotencyDataLayer,
  IdempotencyClaimTransactionError,
  IdempotencyTransactionAbortedError,
  IdempotencyUnavailableError,
  type IsolationLevel,
  type QueryResult,
  type StatementResult,
} from 'nestjs-idempotent-consumer';
import type pg from 'pg';

/**
 * A data layer of the application's own, as a user writes one with the package's public API only:
 * the claims of `IdempotencyModule` on a knex instance (its `pg` driver), whose handlers write
 * through `layer.db`, the claim's knex transaction while one is open, the knex instance elsewhere.
 * `dataLayerContract()` proves it (test/knex-data-layer.e2e-spec.ts).
 */
export class KnexDataLayer implements IdempotencyDataLayer {
  readonly name = 'knex';
  readonly schemaAdvice = 'sql-files';
  private host!: DataLayerHost;
  private knex!: Knex;

  /** @param token The provider of the application's knex instance. */
  constructor(private readonly token: InjectionToken) {}

  attach(host: DataLayerHost): void {
    this.host = host;
  }

  async start(): Promise<void> {
    this.knex = this.host.moduleRef.get<Knex>(this.token, { strict: false });
  }

  /** What the application writes through: the claim's transaction inside an idempotent handler, else the knex instance. */
  get db(): Knex {
    return this.openClaim()?.handle ?? this.knex;
  }

  async query<Row>(text: string, parameters?: readonly unknown[]): Promise<QueryResult<Row>> {
    // The module's SQL has $1 placeholders (and jsonb's ? operators): sent as it is, not through knex's query builder.
    const claim = this.openClaim();
    if (claim) {
      return claim.query<Row>(text, parameters);
    }
    const connection = (await this.knex.client.acquireConnection()) as pg.Client;
    try {
      return answered<Row>(await connection.query(text, parameters as unknown[]));
    } finally {
      this.knex.client.releaseConnection(connection);
    }
  }

  /** The claim of this layer open in the caller's context, if any. */
  private openClaim(): KnexClaimConnection | undefined {
    const claim = this.host.storage.getStore()?.transaction;
    return claim instanceof KnexClaimConnection && claim.isOpen ? claim : undefined;
  }

  async connect(timeoutMs: number, claimant: Claimant): Promise<ClaimConnection> {
    const taking = this.knex.client.acquireConnection() as Promise<pg.Client>;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)));
    let connection: pg.Client | undefined;
    try {
      connection = await Promise.race([taking, timedOut]);
    } catch (error) {
      throw new IdempotencyUnavailableError(`knex found no connection for ${claimant.consumer}: ${(error as Error).message}`, claimant.consumer, claimant.key, { cause: error });
    } finally {
      clearTimeout(timer);
    }
    if (connection === undefined) {
      taking.then((late) => this.knex.client.releaseConnection(late), () => undefined);
      throw new IdempotencyUnavailableError(`knex found no connection within ${timeoutMs} ms for ${claimant.consumer}`, claimant.consumer, claimant.key);
    }
    return new KnexClaimConnection(this.knex, connection, claimant);
  }
}

/** A statement's answer as `query()` gives it. */
function answered<Row>(result: pg.QueryResult): QueryResult<Row> {
  return { rows: result.rows as Row[], rowCount: result.rowCount ?? result.rows.length };
}

/** A COMMIT or ROLLBACK (not ROLLBACK TO) of the transaction the statement runs in. */
const ENDS_TRANSACTION = /^\s*(commit|end|rollback|abort)\b(?!\s+to\b)/i;

type Callback = (error: Error | null, result?: unknown) => void;

/**
 * The claim on one connection of knex's pool: a knex transaction on it (knex sends BEGIN, and makes
 * a transaction opened on it a savepoint), the module's statements sent as one multi-statement
 * query each. While the claim is open, the handler's statements on the connection take turns, and
 * a COMMIT or ROLLBACK of the claim's transaction sent by the handler is refused.
 */
class KnexClaimConnection implements ClaimConnection {
  readonly readsVoid = true;
  private trx: Knex.Transaction | undefined;
  private deferred: string[] = [];
  /** The connection's own `query`, and the last statement sent through it, settled either way. */
  private readonly send: pg.Client['query'];
  private last: Promise<unknown> = Promise.resolve();
  /** True while the claim itself ends the transaction (knex's COMMIT or ROLLBACK). */
  private ending = false;

  constructor(
    private readonly knex: Knex,
    private readonly connection: pg.Client,
    private readonly claimant: Claimant,
  ) {
    this.send = connection.query.bind(connection) as pg.Client['query'];
    connection.query = ((config: string | { text: string }, ...rest: unknown[]) => this.handlerQuery(config, rest)) as pg.Client['query'];
  }

  get isOpen(): boolean {
    return this.trx !== undefined;
  }

  get handle(): Knex.Transaction {
    return this.trx!;
  }

  literal(value: string): string {
    return this.connection.escapeLiteral(value);
  }

  async begin(isolationLevel: IsolationLevel | undefined, statements: string[]): Promise<StatementResult[]> {
    const level = (isolationLevel ?? 'READ COMMITTED').toLowerCase() as Knex.IsolationLevels;
    this.trx = await this.knex.transaction({ connection: this.connection, isolationLevel: level });
    return this.statements(statements);
  }

  async commit(statements: string[], undoWork = false): Promise<void> {
    const status = this.status();
    if (status === 'E' && !undoWork) {
      throw new IdempotencyTransactionAbortedError(this.claimant.consumer, this.claimant.key);
    }
    if (status !== 'T' && status !== 'E') {
      throw new IdempotencyClaimTransactionError(`${this.claimant.consumer} ended the claim's transaction itself`, this.claimant.consumer, this.claimant.key);
    }
    await this.statements([...(undoWork ? ['ROLLBACK TO SAVEPOINT idempotent_handler_work'] : this.deferred), ...statements]);
    // PostgreSQL answers an aborted transaction's COMMIT with a ROLLBACK, which knex does not tell apart: none is aborted here.
    if (this.status() !== 'T') {
      throw new IdempotencyTransactionAbortedError(this.claimant.consumer, this.claimant.key);
    }
    await this.end((trx) => trx.commit());
  }

  /** One parameterised statement in the claim's transaction, in turn with the handler's. */
  async query<Row>(text: string, parameters?: readonly unknown[]): Promise<QueryResult<Row>> {
    return answered<Row>(await this.inTurn(() => this.send(text, parameters as unknown[])));
  }

  defer(statement: string): void {
    this.deferred.push(statement);
  }

  async listen(channel: string, notified: () => void, lost: (error: Error) => void): Promise<() => Promise<void>> {
    let told = false;
    const failed = (error?: Error) => {
      if (!told) {
        told = true;
        lost(error ?? new Error('the connection ended'));
      }
    };
    this.connection.on('notification', notified).on('error', failed).on('end', failed);
    await this.send(`LISTEN "${channel}"`);
    return async () => {
      this.connection.off('notification', notified).off('error', failed).off('end', failed);
      await this.send('UNLISTEN *');
    };
  }

  async rollback(statements: string[] = []): Promise<StatementResult[]> {
    try {
      return await this.statements(statements);
    } finally {
      await this.end((trx) => trx.rollback());
    }
  }

  async close(): Promise<void> {
    if (this.trx) {
      await this.rollback().catch(() => undefined);
    }
    this.connection.query = this.send;
    this.knex.client.releaseConnection(this.connection);
  }

  /** The module's statements as one query; their results. */
  private async statements(statements: string[]): Promise<StatementResult[]> {
    if (statements.length === 0) {
      return [];
    }
    const results = (await this.inTurn(() => this.send(statements.join(';\n')))) as StatementResult | StatementResult[];
    return Array.isArray(results) ? results : [results];
  }

  /** Ends knex's transaction (its COMMIT or ROLLBACK passes the handler's refusal), and fails if it failed. */
  private async end(ending: (trx: Knex.Transaction) => Promise<unknown>): Promise<void> {
    const trx = this.trx;
    this.trx = undefined;
    this.deferred = [];
    if (trx === undefined || trx.isCompleted()) {
      return;
    }
    this.ending = true;
    try {
      await ending(trx);
      await trx.executionPromise;
    } finally {
      this.ending = false;
    }
  }

  /** The transaction status PostgreSQL reported with its last answer: 'I' idle, 'T' in a transaction, 'E' in a failed one. */
  private status(): string | null {
    return (this.connection as unknown as { getTransactionStatus(): string | null }).getTransactionStatus();
  }

  /** A statement knex sends for the handler (callback style): in turn, and refused when it ends the claim's transaction. */
  private handlerQuery(config: string | { text: string }, rest: unknown[]): unknown {
    const callback = typeof rest[rest.length - 1] === 'function' ? (rest.pop() as Callback) : undefined;
    const text = typeof config === 'string' ? config : config.text;
    if (this.trx && !this.ending && ENDS_TRANSACTION.test(text)) {
      const refused = new IdempotencyClaimTransactionError(
        `${this.claimant.consumer} sent ${text.trim().split(/\s/, 1)[0].toUpperCase()} on the claim's transaction, which belongs to @IdempotentHandler(): ` +
          'return from the handler to commit it, throw to roll it back; a transaction opened with trx.transaction() is a savepoint and is fine.',
        this.claimant.consumer,
        this.claimant.key,
      );
      if (callback) {
        queueMicrotask(() => callback(refused));
        return undefined;
      }
      return Promise.reject(refused);
    }
    const sent = this.inTurn(() => (this.send as (...args: unknown[]) => Promise<unknown>)(config, ...rest));
    if (!callback) {
      return sent;
    }
    sent.then(
      (result) => callback(null, result),
      (error: Error) => callback(error),
    );
    return undefined;
  }

  /** Sends once the statements sent before are answered: pg 8 warns of a query sent while another runs. */
  private inTurn<T>(send: () => Promise<T>): Promise<T> {
    const sent = this.last.then(send);
    this.last = sent.then(
      () => undefined,
      () => undefined,
    );
    return sent;
  }
}
