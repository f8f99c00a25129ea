import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource, QueryRunner } from 'typeorm';
import { IdempotencyPurgeError } from '../errors/idempotency-purge.error.js';
import { RESOLVED_OPTIONS } from '../idempotency.internal-constants.js';
import { messages } from '../idempotency.messages.js';
import type { ResolvedIdempotencyOptions } from '../idempotency.options.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import type { PurgeOutcome, PurgeRun } from './purge-run.js';
import { purgeBatchSql, TRY_LOCK_SQL, UNLOCK_SQL } from './purge.queries.js';

/**
 * Deletes expired message ids, in batches of `purge.batchSize`, each its own short transaction;
 * only one instance of a cluster purges at a time (a PostgreSQL advisory lock). The timer of
 * `purge.interval` calls it; call `purgeNow()` to purge at another moment.
 */
@Injectable()
export class IdempotencyPurgeService implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private dataSource: DataSource;
  private running: Promise<PurgeRun> | undefined;
  private stopping = false;

  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly metrics: IdempotencyMetricsService,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    this.dataSource = this.moduleRef.get<DataSource>(getDataSourceToken(this.options.dataSource), { strict: false });
  }

  /** A run in progress ends after its current batch; shutdown waits for it. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.running?.catch(() => undefined);
  }

  /**
   * Deletes every expired id now. A call while this instance is purging joins the run in progress.
   * @returns What the run did; `skipped` when another instance holds the purge lock.
   * @throws IdempotencyPurgeError when the database fails; the batches committed before stay deleted.
   */
  purgeNow(): Promise<PurgeRun> {
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async run(): Promise<PurgeRun> {
    const progress = { startedAt: new Date(), started: performance.now(), rows: 0, batches: 0 };
    const finish = (outcome: PurgeOutcome): PurgeRun => {
      const { startedAt, started, rows, batches } = progress;
      const run = { outcome, rows, batches, startedAt, durationMs: Math.round(performance.now() - started) };
      this.metrics.recordPurge(run);
      return run;
    };
    const queryRunner = this.dataSource.createQueryRunner();
    try {
      if (!(await this.tryLock(queryRunner))) {
        return finish('skipped');
      }
      try {
        await this.deleteExpired(queryRunner, progress);
      } finally {
        await queryRunner.query(UNLOCK_SQL, [this.options.tableName]);
      }
      const run = finish('purged');
      if (run.rows > 0) {
        this.logger.log(messages.purged(this.options.tableName, run.rows, run.batches, run.durationMs));
      }
      return run;
    } catch (error) {
      const run = finish('failed');
      throw new IdempotencyPurgeError(messages.purgeFailed(this.options.tableName, run.rows), run, { cause: error });
    } finally {
      await queryRunner.release();
    }
  }

  private async tryLock(queryRunner: QueryRunner): Promise<boolean> {
    const [{ locked }] = (await queryRunner.query(TRY_LOCK_SQL, [this.options.tableName])) as { locked: boolean }[];
    return locked;
  }

  /** Batch after batch until one comes back short (nothing expired is left) or the application stops. */
  private async deleteExpired(queryRunner: QueryRunner, progress: { rows: number; batches: number }): Promise<void> {
    const { tableName, purge } = this.options;
    const sql = purgeBatchSql(tableName, purge.batchSize);
    while (!this.stopping) {
      const { affected = 0 } = await queryRunner.query(sql, [], true);
      progress.rows += affected;
      progress.batches += 1;
      if (affected < purge.batchSize) {
        return;
      }
    }
  }
}
