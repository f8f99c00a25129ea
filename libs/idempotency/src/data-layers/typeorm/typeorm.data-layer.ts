import { Logger } from '@nestjs/common';
import type { DataSource, QueryRunner, ReplicationMode } from 'typeorm';
import { IdempotencyOptionsError } from '../../errors/idempotency.errors.js';
import { loadOptionalPackage } from '../../optional/load-optional-package.js';
import type { Claimant, ClaimConnection, DataLayerHost, IdempotencyDataLayer, QueryResult } from '../data-layer.js';
import { dataLayerMessages } from '../data-layer.messages.js';
import { TypeOrmClaimConnection } from './typeorm-claim-connection.js';
import { Mysql2PoolDataLayer, type Mysql2Pool } from '../mysql2/mysql2-pool.data-layer.js';

/** Options of `TypeOrmDataLayer`. */
export interface TypeOrmDataLayerOptions {
  /** The name of the TypeORM data source that holds the processed-messages table. Default: the default data source. */
  dataSource?: string;
}

type CreateQueryRunner = (mode?: ReplicationMode) => QueryRunner;

/** TypeORM's types of data source on MariaDB (and MySQL), whose driver keeps a mysql2 pool. */
const MARIADB_TYPES: ReadonlySet<string> = new Set(['mariadb', 'mysql']);

/**
 * The claims in a TypeORM data source (`TypeOrmModule.forRoot()`), the module's default data layer.
 * The data source is on PostgreSQL (`type: 'postgres'`) or on MariaDB 10.6 or newer
 * (`type: 'mariadb'` or `'mysql'`, with the `mysql2` driver).
 *
 * Every write through that data source joins the claim in flight. While an idempotent handler
 * runs, `dataSource.createQueryRunner()` (which injected repositories, `dataSource.manager`,
 * `dataSource.query()`, `dataSource.transaction()`, query builders and transaction helpers such as
 * `@nestjs-cls/transactional` and `typeorm-transactional` all go through) hands out the claim's own
 * query runner, so their statements run in the claim's transaction (a nested transaction becomes
 * a savepoint) and commit or roll back with it; reads see the handler's uncommitted writes, and
 * no handler needs a second pooled connection. Reads that TypeORM sends to a replica (a data
 * source with `replication` options) do not join. Other data sources cannot commit with the
 * claim: the first use of one inside a handler logs a warning naming the handler and the data source.
 * On MariaDB the join is made on the driver's mysql2 pool, as `Mysql2PoolDataLayer` makes it: every
 * query runner that connects while a handler runs gets the claim's connection, and its
 * transactions become savepoints; the module's own statements run at READ COMMITTED.
 *
 * The join stays for the data source's life: a handler still in flight while the application shuts
 * down (its module hooks run before the data source closes) keeps writing in its claim's transaction.
 *
 * @example
 * ```ts
 * IdempotencyModule.forRoot({ dataLayer: new TypeOrmDataLayer({ dataSource: 'billing' }) })
 * ```
 */
export class TypeOrmDataLayer implements IdempotencyDataLayer {
  readonly name = 'TypeORM';
  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  readonly schemaAdvice = 'typeorm-migrations';
  private readonly logger = new Logger('Idempotency');
  private readonly warned = new Set<string>();
  private host!: DataLayerHost;
  private dataSource: DataSource | undefined;
  private resolving: Promise<DataSource> | undefined;
  /** On MariaDB: the layer of the driver's mysql2 pool, which claims and queries go through. */
  private mariaDb: Mysql2PoolDataLayer | undefined;

  /** @throws IdempotencyOptionsError when `dataSource` is not a name. */
  constructor(private readonly options: TypeOrmDataLayerOptions = {}) {
    const { dataSource } = options;
    if (dataSource !== undefined && (typeof dataSource !== 'string' || dataSource === '')) {
      throw new IdempotencyOptionsError(dataLayerMessages.invalidDataSource(dataSource));
    }
  }

  /** Of `IdempotencyDataLayer`: the data source's database, known once it is found (`start()`, or the first claim). */
  get dialect(): 'postgres' | 'mariadb' | undefined {
    return this.dataSource === undefined ? undefined : this.mariaDb ? 'mariadb' : 'postgres';
  }

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  attach(host: DataLayerHost): void {
    this.host = host;
  }

  /** Joins the claims' data source and watches the application's others. Called by the module. */
  async start(): Promise<void> {
    const claims = await this.claimDataSource();
    const { DataSource } = await import('typeorm');
    for (const wrapper of this.host.discovery.getProviders()) {
      if (wrapper.instance instanceof DataSource && wrapper.instance !== claims && wrapper.isDependencyTreeStatic()) {
        this.warnOnUse(wrapper.instance, String(wrapper.name));
      }
    }
  }

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  async query<Row>(text: string, parameters?: readonly unknown[]): Promise<QueryResult<Row>> {
    const dataSource = this.dataSource ?? (await this.claimDataSource());
    if (this.mariaDb) {
      return this.mariaDb.query<Row>(text, parameters);
    }
    // Inside a handler this is the claim's runner, whose release() leaves it to the claim.
    const runner = dataSource.createQueryRunner();
    try {
      const result = await runner.query(text, parameters as unknown[], true);
      return { rows: result.records as Row[], rowCount: result.affected ?? result.records.length };
    } finally {
      await runner.release();
    }
  }

  /** Of `IdempotencyDataLayer`: called by the module, not by the application. */
  async connect(timeoutMs: number, claimant: Claimant): Promise<ClaimConnection> {
    const dataSource = this.dataSource ?? (await this.claimDataSource());
    return this.mariaDb ? this.mariaDb.connect(timeoutMs, claimant) : TypeOrmClaimConnection.connect(dataSource, timeoutMs, claimant);
  }

  /**
   * The data source of the claims, joined to them; resolved at the first call (a message may come before the module's init).
   * @throws IdempotencyOptionsError when the application has no such data source (no `TypeOrmModule.forRoot()`),
   *   or it is on neither PostgreSQL nor MariaDB.
   */
  private claimDataSource(): Promise<DataSource> {
    this.resolving ??= this.find().then(async (dataSource) => {
      const { type } = dataSource.options;
      if (MARIADB_TYPES.has(type)) {
        await this.joinMariaDb(dataSource);
        this.dataSource = dataSource;
        return dataSource;
      }
      if (type !== 'postgres') {
        throw new IdempotencyOptionsError(dataLayerMessages.typeOrmTypeUnsupported(type));
      }
      this.intercept(dataSource, (claim, mode, create) => {
        const transaction = claim?.transaction;
        return transaction instanceof TypeOrmClaimConnection && transaction.isOpen && transaction.dataSource === dataSource && !readsFromReplica(dataSource, mode)
          ? transaction.lease()
          : create(mode);
      });
      this.dataSource = dataSource;
      return dataSource;
    });
    return this.resolving;
  }

  /** On MariaDB: the claims join the driver's mysql2 pool, as `Mysql2PoolDataLayer` joins a pool. */
  private async joinMariaDb(dataSource: DataSource): Promise<void> {
    const pool = (dataSource.driver as { pool?: Mysql2Pool }).pool;
    if (pool === undefined) {
      throw new IdempotencyOptionsError(dataLayerMessages.typeOrmReplicationOnMariaDb());
    }
    // IdempotencyContext.manager answers the data source's manager, whose writes join the claim through the pool.
    const layer = new Mysql2PoolDataLayer({ pool });
    layer.entityManager = dataSource.manager;
    layer.attach(this.host);
    await layer.start();
    this.mariaDb = layer;
  }

  private async find(): Promise<DataSource> {
    const { getDataSourceToken } = await loadOptionalPackage('@nestjs/typeorm', 'the TypeORM data layer', () => import('@nestjs/typeorm'));
    try {
      return this.host.moduleRef.get<DataSource>(getDataSourceToken(this.options.dataSource), { strict: false });
    } catch (error) {
      throw new IdempotencyOptionsError(dataLayerMessages.dataSourceMissing(this.options.dataSource), { cause: error });
    }
  }

  private warnOnUse(dataSource: DataSource, name: string): void {
    this.intercept(dataSource, (claim, mode, create) => {
      if (!readsFromReplica(dataSource, mode) && claim?.transaction?.isOpen && !this.warned.has(`${claim.consumer}\u0000${name}`)) {
        this.warned.add(`${claim.consumer}\u0000${name}`);
        this.logger.warn(dataLayerMessages.otherDataSourceUsed(claim.consumer, name));
      }
      return create(mode);
    });
  }

  private intercept(
    dataSource: DataSource,
    choose: (claim: ReturnType<DataLayerHost['storage']['getStore']>, mode: ReplicationMode, create: CreateQueryRunner) => QueryRunner,
  ): void {
    const original = dataSource.createQueryRunner;
    const create: CreateQueryRunner = (mode) => original.call(dataSource, mode);
    const storage = this.host.storage;
    dataSource.createQueryRunner = (mode: ReplicationMode = 'master') => choose(storage.getStore(), mode, create);
  }
}

/** Reads ask for `'slave'` by default; only a data source with `replication` options has replicas to send them to. */
function readsFromReplica(dataSource: DataSource, mode: ReplicationMode): boolean {
  return mode === 'slave' && dataSource.driver.isReplicated;
}
