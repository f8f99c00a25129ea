import { Inject, Injectable, Logger } from '@nestjs/common';
import { PURGE_OPTIONS, type ResolvedPurgeOptions } from './purge.options.js';
import { RepeatingTask, type TaskSchedule } from '../scheduling/repeating-task.js';
import { IdempotencyPurgeService } from './idempotency-purge.service.js';

/**
 * Runs the purge every `purge.interval`, from application bootstrap to shutdown: each run starts
 * one interval after the previous one ended, so runs never overlap. Runs nothing when the
 * interval is `false`. The timer does not keep the process alive.
 */
@Injectable()
export class PurgeScheduler extends RepeatingTask {
  private readonly logger = new Logger('Idempotency');

  constructor(
    @Inject(PURGE_OPTIONS) private readonly options: ResolvedPurgeOptions,
    private readonly purge: IdempotencyPurgeService,
  ) {
    super();
  }

  protected schedule(): TaskSchedule | null {
    const { intervalMs } = this.options;
    return intervalMs === null ? null : { intervalMs, now: false };
  }

  protected async run(): Promise<void> {
    await this.purge.purgeNow().catch((error: Error) => this.logger.error(error.message, error.cause instanceof Error ? error.cause.stack : undefined));
  }
}
