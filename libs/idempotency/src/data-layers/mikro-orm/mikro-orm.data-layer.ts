import type { InjectionToken } from '@nestjs/common';
import { IdempotencyOptionsError } from '../../errors/idempotency.errors.js';
import { takeConnection } from '../take-connection.js';
import { loadOptionalPackage } from '../../optional/load-optional-package.js';
import type { Claimant, ClaimConnection, DataLayerHost, IdempotencyDataLayer, QueryResult } from '../data-layer.js';
import { dataLayerMessages } from '../data-layer.messages.js';
import { JoinedClaimConnection } from '../joined-claim-connection.js';
import { MariaDbClaimConnection, type MariaDbConnection, calledBack, takesSeveralStatements } from '../mariadb-claim-connection.js';
import { OWN_STATEMENT_OPTIONS, ownStatement, positional, toQueryResult } from '../mariadb-own-statements.js';
import type { ClaimClient } from '../sql-claim-connection.js';

/** Options of `MikroOrmDataLayer`. */
export interface MikroOrmDataLayerOptions {
  /** The token of the application's `MikroORM` instance. @default `MikroORM` (as `@mikro-orm/nestjs` provides it) */
  orm?: InjectionToken;
}

/** A connection of knex's pool: node-postgres's client, or on MariaDB a connection of `mariadb/callback`. */
type KnexConnection = ClaimClient | MariaDbConnection;

/** The knex driver of `@mikro-orm/mariadb` (on `mariadb/callback`). */
const MARIADB_DRIVER = 'mariadb';

/** What the layer uses of knex's client (MikroORM's SQL drivers run on knex). */
interface KnexClient {
  readonly driverName: string;
  acquireConnection(): Promise<KnexConnection>;
  releaseConnection(connection: unknown): Promise<unknown>;
  pool?: { numFree?(): number; numPendingAcquires?(): number; max?: number };
}

/** What the layer uses of a `MikroORM` instance. */
interface MikroOrmInstance {
  em: { getConnection(): { getKnex?(): { client: KnexClient } } };
}

/**
 * The claims in MikroORM's database (`@mikro-orm/postgresql` 6.6; on MariaDB, `@mikro-orm/mariadb`),
 * through the knex client its driver runs on.
 *
 * While an idempotent handler runs, knex hands out the claim's own connection, so the entity
 * managers' work (`em.flush()`, `em.insert()`, `em.execute()`, `em.transactional()`) runs in the
 * claim's transaction and commits or rolls back with it. The transaction a flush or
 * `em.transactional()` opens becomes a savepoint; a COMMIT or ROLLBACK of the claim's own
 * transaction is refused.
 *
 * @example
 * ```ts
 * IdempotencyModule.forRoot({ dataLayer: new MikroOrmDataLayer() })
 * ```
 */
export class MikroOrmDataLayer implements IdempotencyDataLayer {
  readonly name = 'MikroORM';
  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  readonly schemaAdvice = 'sql-files';
  private host!: DataLayerHost;
  private knex: KnexClient | undefined;
  private resolving: Promise<KnexClient> | undefined;
  private acquireOwn!: () => Promise<KnexConnection>;
  private onMariaDb = false;
  private releaseOwn!: (connection: unknown) => Promise<unknown>;

  constructor(private readonly options: MikroOrmDataLayerOptions = {}) {}

  /** Of `IdempotencyDataLayer`: the database of MikroORM's driver, known once the layer started. */
  get dialect(): 'postgres' | 'mariadb' | undefined {
    return this.knex === undefined ? undefined : this.onMariaDb ? 'mariadb' : 'postgres';
  }

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  attach(host: DataLayerHost): void {
    this.host = host;
  }

  /** Finds MikroORM's knex client and joins it to the claims. Called by the module. */
  async start(): Promise<void> {
    await this.knexClient();
  }

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  async query<Row>(text: string, parameters: readonly unknown[] = []): Promise<QueryResult<Row>> {
    const knex = this.knex ?? (await this.knexClient());
    // Inside a handler this is the claim's connection, whose release leaves it to the claim.
    const connection = await knex.acquireConnection();
    try {
      if (!this.onMariaDb) {
        const query = (connection as ClaimClient).query as unknown as (text: string, values: unknown[]) => Promise<{ rows: unknown[]; rowCount: number | null }>;
        const result = await query.call(connection, text, parameters as unknown[]);
        return { rows: result.rows as Row[], rowCount: result.rowCount ?? result.rows.length };
      }
      const send = (sql: string, values: unknown[]) => calledBack((done) => (connection as MariaDbConnection).query({ sql, ...OWN_STATEMENT_OPTIONS }, values, done));
      if (MariaDbClaimConnection.isLease(connection)) {
        return toQueryResult(await send(...positional(text, parameters)));
      }
      return await ownStatement<Row>(send, takesSeveralStatements(connection), text, parameters);
    } finally {
      await knex.releaseConnection(connection);
    }
  }

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  async connect(timeoutMs: number, claimant: Claimant): Promise<ClaimConnection> {
    const knex = this.knex ?? (await this.knexClient());
    const connection = await takeConnection(
      {
        take: () => this.acquireOwn.call(knex),
        giveBack: (late) => this.releaseOwn.call(knex, late),
        idleFree: (knex.pool?.numFree?.() ?? 0) > (knex.pool?.numPendingAcquires?.() ?? 0),
        figures: () => ({ size: knex.pool?.max, waiting: knex.pool?.numPendingAcquires?.() }),
      },
      timeoutMs,
      claimant,
    );
    const giveBack = () => this.releaseOwn.call(knex, connection).then(() => undefined);
    if (!this.onMariaDb) {
      return new JoinedClaimConnection(knex, connection as ClaimClient, claimant, timeoutMs, giveBack);
    }
    // mariadb/callback's connection methods read private fields: they run on the connection.
    const driver = { promises: false, multipleStatements: takesSeveralStatements(connection), methodsOnLease: false };
    return new MariaDbClaimConnection(knex, connection as MariaDbConnection, driver, claimant, timeoutMs, giveBack);
  }

  private knexClient(): Promise<KnexClient> {
    this.resolving ??= this.find().then((knex) => {
      this.onMariaDb = knex.driverName === MARIADB_DRIVER;
      this.join(knex);
      this.knex = knex;
      return knex;
    });
    return this.resolving;
  }

  private async find(): Promise<KnexClient> {
    const token = this.options.orm ?? (await loadOptionalPackage('@mikro-orm/core', 'the MikroORM data layer', () => import('@mikro-orm/core'))).MikroORM;
    let orm: MikroOrmInstance;
    try {
      orm = this.host.moduleRef.get<MikroOrmInstance>(token, { strict: false });
    } catch (error) {
      throw new IdempotencyOptionsError(dataLayerMessages.mikroOrmMissing(), { cause: error });
    }
    const knex = orm.em.getConnection().getKnex?.().client;
    if (!knex || typeof knex.acquireConnection !== 'function' || !(knex.driverName === 'pg' || knex.driverName === MARIADB_DRIVER)) {
      throw new IdempotencyOptionsError(dataLayerMessages.mikroOrmNotSql());
    }
    return knex;
  }

  /** While a claim on `knex` is open in the caller's context, knex hands out its connection. */
  private join(knex: KnexClient): void {
    const storage = this.host.storage;
    const onMariaDb = this.onMariaDb;
    const joined = (): KnexConnection | undefined => {
      const claim = onMariaDb ? MariaDbClaimConnection.inFlight(storage) : JoinedClaimConnection.inFlight(storage);
      return claim?.owner === knex ? (claim.lease() as unknown as KnexConnection) : undefined;
    };
    const isLease = onMariaDb ? MariaDbClaimConnection.isLease : JoinedClaimConnection.isLease;
    const acquireOwn = knex.acquireConnection;
    const releaseOwn = knex.releaseConnection;
    this.acquireOwn = acquireOwn;
    this.releaseOwn = releaseOwn;
    knex.acquireConnection = function acquireJoined(this: KnexClient) {
      const connection = joined();
      return connection ? Promise.resolve(connection) : acquireOwn.call(this);
    };
    knex.releaseConnection = function releaseJoined(this: KnexClient, connection: unknown) {
      return isLease(connection) ? Promise.resolve() : releaseOwn.call(this, connection);
    };
  }
}
