import type { IsolationLevel } from '../options/handler-values.js';

/** What of a claim's request its statements carry: the message, who claims it, and for how long. */
export interface ClaimValues {
  readonly consumer: string;
  readonly key: string;
  readonly sender: string;
  readonly fingerprint: string | null;
  readonly retentionMs: number;
  /** The handler's name before 0.3.0, whose stored rows count as taken too. */
  readonly formerConsumer: string | undefined;
  readonly isolationLevel: IsolationLevel | undefined;
}

/** What is recorded of a response on the claim's row. */
export interface ResponseValues {
  readonly status: number | null;
  readonly headers: Readonly<Record<string, string | string[]>> | null;
  readonly body: Buffer | null;
}

/** What one statement of a multi-statement query answered (node-postgres's shape). */
export interface StatementResult {
  /** The statement's command tag: `INSERT`, `SELECT`, `COMMIT` (PostgreSQL answers `ROLLBACK` to the COMMIT of an aborted transaction). */
  readonly command: string;
  /** Rows the statement inserted, updated, deleted or returned. */
  readonly rowCount: number | null;
  /** The rows it returned, as objects by column name; bytea columns as a `Buffer`. */
  readonly rows: unknown[];
}

/** The claim's connection, as far as the claim's BEGIN uses it (a `ClaimConnection`). */
export interface ClaimOpening {
  begin(isolationLevel: IsolationLevel | undefined, statements: string[]): Promise<StatementResult[]>;
}

/**
 * The SQL of the claim. `table` is a validated plain identifier; every value goes through
 * `literal` (the connection's `escapeLiteral`), since these statements travel as one
 * multi-statement simple query with BEGIN or COMMIT, which takes no parameters.
 */
export interface ClaimSql {
  readonly table: string;
  readonly literal: (value: string) => string;
  /** The connection reads a `void` column (node-postgres does; Prisma's raw queries, which `run()` may be given, do not). */
  readonly readsVoid: boolean;
}

/** A row of `twinStatement`. */
export interface StoredClaim {
  fingerprint: string | null;
  response_status: number | null;
  response_headers: Record<string, string | string[]> | null;
  response_body: Buffer | null;
  /** Held by a delivery in lease mode (a handler that changed its mode), not completed. */
  leased: boolean;
}

/** A row of `recordExpiryStatement`. */
export interface RecordExpiry {
  expires_in_ms: number;
}

/** What one cheap read of the store says: its size and how far the purge is behind. */
export interface StoreFigures {
  /** The rows the database's statistics estimate; null when they cannot tell. */
  readonly estimatedRows: number | null;
  /** The table's size on disk, indexes included. */
  readonly totalBytes: number;
  /** How long ago the oldest expired, not yet purged id expired; null when none has. */
  readonly lagMs: number | null;
  /** Age of the unexpired row that expires first; null when none. */
  readonly oldestAgeMs: number | null;
}

/** What one purge batch answers. */
export interface PurgeBatchResult {
  /** Whether this batch held the purge lock; when not, it selected and deleted nothing. */
  readonly locked: boolean;
  /** Rows deleted. */
  readonly rows: number;
}

/** One message as written, each value a SQL literal. */
export interface OutboxRowLiterals {
  readonly id: string;
  readonly destination: string;
  readonly address: string;
  readonly pattern: string;
  readonly headers: string;
  readonly payload: string;
  readonly orderingKey: string;
  /** An expression: when the message is due. */
  readonly availableAt: string;
}

/** A message the relay took. */
export interface OutboxRow {
  readonly seq: string;
  readonly id: string;
  readonly destination: string;
  readonly address: string;
  readonly pattern: string | null;
  readonly headers: Record<string, string>;
  readonly payload: string;
  readonly ordering_key: string | null;
  readonly attempts: number;
  readonly last_error: string | null;
}

/** One failed publish: its message, the error (a literal), and its delay before the next attempt; `dead`: parked. */
export interface FailedPublish {
  readonly seq: string;
  readonly error: string;
  readonly delayMs: number;
  readonly dead: boolean;
}

/**
 * The claim in a dialect: the statements of one claim's transaction, each a text without
 * parameters (values through `ClaimSql.literal`), since they travel with the BEGIN or the COMMIT.
 */
export interface ClaimDialect {
  /**
   * Opens `connection`'s transaction at `isolationLevel` with the claim (and `after`, the
   * statements that follow a won claim); whether this delivery won it. A lost claim leaves the
   * transaction open, to read the twin in.
   * @throws the database's error when the claim waited for a twin's row past its lock timeout.
   */
  begin(connection: ClaimOpening, sql: ClaimSql, request: ClaimValues, after: string[]): Promise<boolean>;
  /** Whether `error` is the claim's: it waited for a twin's uncommitted row past its lock timeout (the twin is in flight). */
  heldByTwin(error: unknown): boolean;
  /** Reads the committed twin's row: its fingerprint, lease and recorded response (a `StoredClaim`). */
  twinStatement(sql: ClaimSql, request: ClaimValues): string;
  /** How long the row under the consumer's own name is kept yet, in ms by the database's clock (a `RecordExpiry`). */
  recordExpiryStatement(sql: ClaimSql, request: ClaimValues): string;
  /** What records `response` on the claim's row, sent with the COMMIT; none for an empty response. */
  recordStatements(sql: ClaimSql, request: ClaimValues, response: ResponseValues): string[];
}

/** The store's statistics in a dialect: a cheap read of its size and purge lag, never a `count(*)`. */
export interface StatisticsDialect {
  /** One round trip, never a `count(*)`, answering the row `toStoreFigures()` reads. */
  storeStatisticsSql(table: string): string;
  toStoreFigures(row: never): StoreFigures;
}

/** The purge in a dialect. */
export interface PurgeDialect {
  /** One batch of at most `batchSize` expired rows, deleted through `query` (the data layer's, in a transaction of its own). */
  purgeBatch(query: StoreQuery, table: string, batchSize: number): Promise<PurgeBatchResult>;
}

/** A parameterised statement in a transaction of its own, as the data layer runs it. */
export type StoreQuery = <Row>(text: string, parameters?: readonly unknown[]) => Promise<{ rows: Row[]; rowCount: number }>;

/** The start-up look at the store's catalogue and at the consumer names stored, in a dialect. */
export interface CatalogueDialect {
  /** One read of the catalogue answering a `StoreCatalogue`, with `catalogueParameters(table)`. */
  readonly catalogueStatement: string;
  catalogueParameters(table: string): string[];
  /** Up to `limit` distinct consumer names, in order (`{ consumer }` rows). */
  storedConsumersSql(table: string, limit: number): string;
  /** Moves up to `limit` ids of consumer `$1` to `$2`, safe beside claims; answers `{ moved }`. */
  moveConsumerSql(table: string, limit: number): string;
  /** Whether consumer `$1` still has a row (`{ held }`). */
  consumerHasRowsSql(table: string): string;
}

/** When an outbox message is due: as soon as its transaction committed, `delayMs` after its transaction began, or at `at`. */
export type OutboxDue = { readonly delayMs: number } | { readonly at: Date } | null;

/** The outbox and its relay in a dialect. */
export interface OutboxDialect {
  /**
   * Whether a message's INSERT wakes the relays of every process at COMMIT (PostgreSQL's NOTIFY),
   * which a relay LISTENs for; without, a relay is woken by the commits of its own process and
   * polls for the others'.
   */
  readonly notifies: boolean;
  /** The columns of the outbox table `$1` (`{ name }` rows; none when a table of the outbox's is missing). */
  readonly outboxColumnsSql: string;
  /** The outbox's lag and dead letters, one row for `toOutboxSample()`. */
  outboxStateSql(table: string): string;
  toOutboxSample(row: never): { readonly lagMs: number; readonly deadLetters: number };
  /** Deletes one batch of the messages dispatched longer ago than the retention; answers how many. */
  purgeDispatched(query: StoreQuery, table: string, retentionMs: number, batchSize: number): Promise<number>;
  /** The expression of when a message is due. */
  dueSql(due: OutboxDue): string;
  /** Writes one message (values as literals), in the order of its ordering key; on PostgreSQL, waking the relays at COMMIT. */
  insertOutboxStatements(table: string, row: OutboxRowLiterals): string[];
  /** A statement the database refuses outside a transaction block (the check of a caller's transaction). */
  inTransactionCheckSql(table: string): string;
  /** Whether `error` is the refusal of `inTransactionCheckSql()`. */
  refusedOutsideTransaction(error: unknown): boolean;
  /** Whether `error` is the INSERT's, of an id the table has already. */
  idTaken(error: unknown, table: string): boolean;
  /** The next batch of due messages, locked for this relay and skipped by the others. */
  takeBatchSql(table: string, batchSize: number, deadLetterHoldsKey: boolean): string;
  markDispatchedSql(table: string, seqs: readonly string[]): string;
  markFailedSql(table: string, failures: readonly FailedPublish[]): string;
  /** Dead letters, oldest first: `$1` the limit, then the filters `$2` to `$6`, each ignored when null. */
  outboxDeadLettersSql(table: string): string;
  /** The dead letter of id `$1`. */
  outboxDeadLetterSql(table: string): string;
  /** The headers column of a row (the relay's batch, a dead letter) as an object. */
  headersOf(column: unknown): Record<string, string>;
  /** Makes the dead letters of `ids` due again and wakes the relays; answers the ids requeued. */
  requeue(query: StoreQuery, table: string, ids: readonly string[]): Promise<string[]>;
  /** Deletes the dead letters of `ids`; answers the ids discarded. */
  discard(query: StoreQuery, table: string, ids: readonly string[]): Promise<string[]>;
}

/** The operators' statements on the processed-messages table, in a dialect. */
export interface AdminDialect {
  /** One message's row: `$1` consumer, `$2` message id. */
  adminLookupSql(table: string, includeBody: boolean): string;
  /** A consumer's newest rows, before `$2` when it is not null. */
  adminListSql(table: string, limit: number): string;
  /** Deletes a message's row unless a live lease holds it, or (`$3` true) in any case. */
  adminForgetSql(table: string): string;
  /** Deletes a message's row while a lease holds it: any, or (`$3` not null) that token's. */
  adminReleaseSql(table: string): string;
}

/**
 * What differs between the databases the store may live in, concern by concern: the claim, the
 * statistics, the purge, the catalogue, the outbox and the operators' statements. The module's
 * services take their statements from the dialect of the data layer they go through and write no
 * SQL of their own. Parameterised statements use `$1`, `$2`... placeholders in every dialect.
 * @internal
 */
export interface StoreDialect {
  /** The database's name, for messages. */
  readonly name: string;
  /** A value as a string literal of the database, quotes included. */
  literal(value: string): string;
  readonly claim: ClaimDialect;
  readonly statistics: StatisticsDialect;
  readonly purge: PurgeDialect;
  readonly catalogue: CatalogueDialect;
  readonly outbox: OutboxDialect;
  readonly admin: AdminDialect;
}
