import { type BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { IdempotencyPurgeError, type PurgeOutcome, type PurgeRun } from '../errors/idempotency.errors.js';
import { purgeMessages } from './purge.messages.js';
import { StoreHandle } from '../store/store.handle.js';
import { PURGE_OPTIONS, type ResolvedPurgeOptions } from './purge.options.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import { IdempotencyTracing } from '../tracing/idempotency-tracing.js';
import { OUTBOX_OPTIONS, type ResolvedOutboxOptions } from '../outbox/outbox.options.js';

/**
 * Deletes expired message ids, in batches of `purge.batchSize`, each one statement in its own short
 * transaction. On PostgreSQL at most one batch runs cluster-wide at any moment: each batch takes a
 * transaction-level advisory lock in the statement that deletes, and lets go of it at its commit, so
 * nothing outlives the statement and the purge works behind PgBouncer in transaction mode. A run
 * whose first batch finds the lock held by another instance is `skipped`; a run that finds it held
 * at a later batch ends there, with what it purged (the other instance carries on). On MariaDB
 * instances purge side by side, each batch skipping the rows another holds. The timer of
 * `purge.interval` calls it; call `purgeNow()` to purge at another moment. With an `outbox`, each
 * run also deletes the messages dispatched longer ago than `outbox.retention` (not counted in its `PurgeRun`).
 */
@Injectable()
export class IdempotencyPurgeService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private running: Promise<PurgeRun> | undefined;
  private stopping = false;

  /** @internal Nest constructs it. */
  constructor(
    @Inject(PURGE_OPTIONS) private readonly options: ResolvedPurgeOptions,
    private readonly metrics: IdempotencyMetricsService,
    private readonly store: StoreHandle,
    private readonly tracing: IdempotencyTracing,
    @Inject(OUTBOX_OPTIONS) private readonly outbox: ResolvedOutboxOptions | null,
  ) {}

  /** A run in progress ends after its current batch; shutdown waits for it. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.running?.catch(() => undefined);
  }

  /**
   * Deletes every expired id now. A call while this instance is purging joins the run in progress.
   * @returns What the run did; `skipped` when another instance's batch held the purge lock at its first batch.
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
      this.tracing.purged(run);
      return run;
    };
    try {
      const outcome = await this.deleteExpired(progress);
      await this.deleteDispatched();
      const run = finish(outcome);
      if (run.rows > 0) {
        this.logger.log(purgeMessages.purged(this.store.table, run.rows, run.batches, run.durationMs));
      }
      return run;
    } catch (error) {
      const run = finish('failed');
      throw new IdempotencyPurgeError(purgeMessages.purgeFailed(this.store.table, run.rows), run, { cause: error });
    }
  }

  /**
   * Batch after batch until one comes back short (nothing expired is left), one finds the purge
   * lock held by another instance, or the application stops.
   */
  private async deleteExpired(progress: { rows: number; batches: number }): Promise<PurgeOutcome> {
    const { batchSize } = this.options;
    while (!this.stopping) {
      const { locked, rows } = await this.store.dialect.purge.purgeBatch(this.store.query, this.store.table, batchSize);
      if (!locked) {
        return progress.batches === 0 ? 'skipped' : 'purged';
      }
      progress.rows += rows;
      progress.batches += 1;
      if (rows < batchSize) {
        return 'purged';
      }
    }
    return 'purged';
  }

  /** The outbox's messages dispatched longer ago than `outbox.retention`, batch after batch, beside the relays. */
  private async deleteDispatched(): Promise<void> {
    if (this.outbox === null) {
      return;
    }
    const { batchSize } = this.options;
    const table = this.store.outboxTable!;
    let deleted = 0;
    while (!this.stopping) {
      const rows = await this.store.dialect.outbox.purgeDispatched(this.store.query, table, this.outbox.retentionMs, batchSize);
      deleted += rows;
      if (rows < batchSize) {
        break;
      }
    }
    if (deleted > 0) {
      this.logger.log(purgeMessages.purgedOutbox(table, deleted));
    }
  }
}
