import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, ModuleRef } from '@nestjs/core';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { AsyncLocalStorage } from 'node:async_hooks';
import { DataSource, type QueryRunner, type ReplicationMode } from 'typeorm';
import { type ActiveClaim, CLAIM_STORAGE } from '../context/idempotency.context.js';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { joinMessages } from './join.messages.js';
import { type ResolvedStoreOptions, STORE_OPTIONS } from './store.options.js';

type CreateQueryRunner = (mode?: ReplicationMode) => QueryRunner;

/**
 * Makes every write through the claims' data source join the claim in flight. While an
 * idempotent handler runs, `dataSource.createQueryRunner()` (which injected repositories,
 * `dataSource.manager`, `dataSource.query()`, `dataSource.transaction()`, query builders and
 * transaction helpers such as `@nestjs-cls/transactional` and `typeorm-transactional` all go
 * through) hands out the claim's own query runner, so their statements run in the claim's
 * transaction (a nested transaction becomes a savepoint) and commit or roll back with it; reads
 * see the handler's uncommitted writes, and no handler needs a second pooled connection. Reads
 * that TypeORM sends to a replica (a data source with `replication` options) do not join.
 *
 * Other data sources cannot commit with the claim: the first use of one inside a handler logs a
 * warning naming the handler and the data source.
 *
 * The join stays for the data source's life: a handler still in flight while the application shuts
 * down (its module hooks run before the data source closes) keeps writing in its claim's transaction.
 * @internal
 */
@Injectable()
export class DataSourceJoin implements OnModuleInit {
  private readonly logger = new Logger('Idempotency');
  private dataSource: DataSource | undefined;
  private readonly warned = new Set<string>();

  constructor(
    @Inject(STORE_OPTIONS) private readonly store: ResolvedStoreOptions,
    @Inject(CLAIM_STORAGE) private readonly storage: AsyncLocalStorage<ActiveClaim>,
    private readonly moduleRef: ModuleRef,
    private readonly discovery: DiscoveryService,
  ) {}

  onModuleInit(): void {
    const claims = this.claimDataSource();
    for (const wrapper of this.discovery.getProviders()) {
      if (wrapper.instance instanceof DataSource && wrapper.instance !== claims && wrapper.isDependencyTreeStatic()) {
        this.warnOnUse(wrapper.instance, String(wrapper.name));
      }
    }
  }

  /**
   * The data source of the claims, joined to them; resolved at the first call (a message may come before `onModuleInit`).
   * @throws IdempotencyOptionsError when the application has no such data source (no `TypeOrmModule.forRoot()`).
   */
  claimDataSource(): DataSource {
    if (!this.dataSource) {
      const dataSource = this.find();
      this.intercept(dataSource, (claim, mode, create) =>
        claim?.transaction?.isOpen && claim.transaction.dataSource === dataSource && !this.readsFromReplica(dataSource, mode)
          ? claim.transaction.queryRunner
          : create(mode),
      );
      this.dataSource = dataSource;
    }
    return this.dataSource;
  }

  private find(): DataSource {
    try {
      return this.moduleRef.get<DataSource>(getDataSourceToken(this.store.dataSource), { strict: false });
    } catch (error) {
      throw new IdempotencyOptionsError(joinMessages.dataSourceMissing(this.store.dataSource), { cause: error });
    }
  }

  private warnOnUse(dataSource: DataSource, name: string): void {
    this.intercept(dataSource, (claim, mode, create) => {
      if (!this.readsFromReplica(dataSource, mode) && claim?.transaction?.isOpen && !this.warned.has(`${claim.consumer}\u0000${name}`)) {
        this.warned.add(`${claim.consumer}\u0000${name}`);
        this.logger.warn(joinMessages.otherDataSourceUsed(claim.consumer, name));
      }
      return create(mode);
    });
  }

  /** Reads ask for `'slave'` by default; only a data source with `replication` options has replicas to send them to. */
  private readsFromReplica(dataSource: DataSource, mode: ReplicationMode): boolean {
    return mode === 'slave' && dataSource.driver.isReplicated;
  }

  private intercept(
    dataSource: DataSource,
    choose: (claim: ActiveClaim | undefined, mode: ReplicationMode, create: CreateQueryRunner) => QueryRunner,
  ): void {
    const original = dataSource.createQueryRunner;
    const create: CreateQueryRunner = (mode) => original.call(dataSource, mode);
    dataSource.createQueryRunner = (mode: ReplicationMode = 'master') => choose(this.storage.getStore(), mode, create);
  }
}
