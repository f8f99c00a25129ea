import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { PURGE_OPTIONS, type ResolvedPurgeOptions } from './purge.options.js';
import { RepeatingTimer } from '../scheduling/repeating-timer.js';
import { IdempotencyPurgeService } from './idempotency-purge.service.js';

/**
 * Runs the purge every `purge.interval`, from application bootstrap to shutdown: each run starts
 * one interval after the previous one ended, so runs never overlap. Runs nothing when the
 * interval is `false`. The timer does not keep the process alive.
 */
@Injectable()
export class PurgeScheduler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private timer: RepeatingTimer | undefined;

  constructor(
    @Inject(PURGE_OPTIONS) private readonly options: ResolvedPurgeOptions,
    private readonly purge: IdempotencyPurgeService,
  ) {}

  /** True while the purge timer runs. */
  get isScheduled(): boolean {
    return this.timer?.isScheduled ?? false;
  }

  onApplicationBootstrap(): void {
    const { intervalMs } = this.options;
    if (intervalMs === null) {
      return;
    }
    this.timer = new RepeatingTimer(intervalMs, () =>
      this.purge.purgeNow().then(
        () => undefined,
        (error: Error) => this.logger.error(error.message, error.cause instanceof Error ? error.cause.stack : undefined),
      ),
    );
    this.timer.start();
  }

  beforeApplicationShutdown(): void {
    this.timer?.stop();
  }
}
