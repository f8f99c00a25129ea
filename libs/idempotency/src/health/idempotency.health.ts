import { Inject, Injectable } from '@nestjs/common';
import { healthMessages } from './health.messages.js';
import { HEALTH_OPTIONS, type ResolvedHealthOptions } from './health.options.js';
import { StoreHandle } from '../store/store.handle.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import { StoreSchemaCheck } from '../discovery/store-schema.check.js';
import { OutboxSchemaCheck } from '../outbox/outbox-schema.check.js';
import { findProblems, type HealthFigures } from './health.assessment.js';
import type { StoreFigures } from '../dialects/store-dialect.js';

/**
 * What `isHealthy()` answers: the shape of a `@nestjs/terminus` indicator's result, so it goes
 * straight into `HealthCheckService.check()`.
 */
export type IdempotencyHealthResult<Key extends string> = Record<Key, { status: 'up' | 'down'; [detail: string]: unknown }>;

/**
 * A health indicator of the processed-messages store, for `@nestjs/terminus` (which the module
 * itself does not need) or any health endpoint. It reports the store's estimated size (from the catalog statistics, never a `count(*)`; `'unknown'` until the table is
 * first analysed), the purge lag (how long ago the oldest expired, not yet purged id expired), the
 * time since this instance's last successful purge, and each sender's duplicate rate over the
 * recent window (this instance's deliveries). It is down when any of them crosses its threshold in
 * the module's `health` options, when the store cannot be read, or when it lacks a table, column
 * or function the handlers use (the check the module makes at start-up, one catalogue query made
 * again on each call, so a store dropped or altered at runtime shows here, with the migrations to add).
 *
 * @example
 * ```ts
 * @Get('health')
 * @HealthCheck()
 * check() {
 *   return this.health.check([() => this.db.pingCheck('database'), () => this.idempotency.isHealthy()]);
 * }
 * ```
 */
@Injectable()
export class IdempotencyHealthIndicator {
  /** @internal Nest constructs it. */
  constructor(
    private readonly metrics: IdempotencyMetricsService,
    @Inject(HEALTH_OPTIONS) private readonly options: ResolvedHealthOptions,
    private readonly store: StoreHandle,
    private readonly schema: StoreSchemaCheck,
    private readonly outboxSchema: OutboxSchemaCheck,
  ) {}

  /**
   * Measures the store and compares each figure with its threshold; down (never a throw) when one
   * is crossed, the store cannot be read or lacks what the handlers use.
   * @param key The indicator's key in the health check's output, `'idempotency'` unless given.
   */
  async isHealthy<const Key extends string = 'idempotency'>(key: Key = 'idempotency' as Key): Promise<IdempotencyHealthResult<Key>> {
    const answer = (status: 'up' | 'down', details: object) => ({ [key]: { status, ...details } }) as IdempotencyHealthResult<Key>;
    let statistics: StoreFigures;
    let outbox: HealthFigures['outbox'] = null;
    try {
      const lacking = (await this.schema.inspect()) ?? (await this.outboxSchema.inspect());
      if (lacking) {
        return answer('down', { message: lacking.message, missing: lacking.missing });
      }
      statistics = await this.store.statistics();
      if (this.store.outboxTable !== null) {
        outbox = await this.store.outboxState();
      }
    } catch (error) {
      return answer('down', { message: healthMessages.storeUnreadable(this.store.table, (error as Error).message) });
    }
    const figures = { ...this.measure(statistics), outbox };
    const problems = findProblems(figures, this.options);
    const report = {
      store: { estimatedRows: figures.estimatedRows ?? 'unknown', totalBytes: statistics.totalBytes },
      purge: {
        lagSeconds: seconds(figures.purgeLagMs),
        secondsSinceLastSuccess: figures.timeSincePurgeMs === null ? null : seconds(figures.timeSincePurgeMs),
        lastRun: this.metrics.purge().lastRun,
      },
      duplicateRates: Object.fromEntries(figures.duplicateRates.map(({ sender, ...counts }) => [sender, counts])),
      ...(figures.outbox === null ? {} : { outbox: { lagSeconds: seconds(figures.outbox.lagMs), deadLetters: figures.outbox.deadLetters } }),
    };
    return problems.length > 0 ? answer('down', { ...report, problems }) : answer('up', report);
  }

  private measure(statistics: StoreFigures): Omit<HealthFigures, 'outbox'> {
    const lastSuccess = this.metrics.purge().lastSuccessAt ?? this.metrics.since;
    return {
      estimatedRows: statistics.estimatedRows,
      purgeLagMs: statistics.lagMs ?? 0,
      timeSincePurgeMs: this.options.maxTimeSincePurgeMs === null ? null : Date.now() - lastSuccess.getTime(),
      duplicateRates: this.metrics.duplicateRates(),
    };
  }
}

function seconds(milliseconds: number): number {
  return Math.round(milliseconds / 1000);
}
