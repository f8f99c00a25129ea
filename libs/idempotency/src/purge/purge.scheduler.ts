import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleInit,
  Optional,
} from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { IdempotencyOptionsError } from '../errors/idempotency-options.error.js';
import { RESOLVED_OPTIONS } from '../idempotency.internal-constants.js';
import { messages } from '../idempotency.messages.js';
import type { ResolvedIdempotencyOptions } from '../idempotency.options.js';
import { IdempotencyPurgeService } from './idempotency-purge.service.js';

/** The name of the purge timer of `tableName` in `SchedulerRegistry`. */
export function purgeTimerName(tableName: string): string {
  return `idempotency:purge:${tableName}`;
}

/**
 * Runs the purge every `purge.interval` through `@nestjs/schedule`'s `SchedulerRegistry`, from
 * application bootstrap to shutdown; registers nothing when the interval is `false`.
 */
@Injectable()
export class PurgeScheduler implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Idempotency');

  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly purge: IdempotencyPurgeService,
    @Optional() private readonly registry?: SchedulerRegistry,
  ) {}

  onModuleInit(): void {
    if (this.options.purge.intervalMs !== null && !this.registry) {
      throw new IdempotencyOptionsError(messages.scheduleModuleMissing());
    }
  }

  onApplicationBootstrap(): void {
    const { intervalMs } = this.options.purge;
    if (intervalMs === null || !this.registry) {
      return;
    }
    const timer = setInterval(() => {
      this.purge.purgeNow().catch((error: Error) => {
        this.logger.error(error.message, error.cause instanceof Error ? error.cause.stack : undefined);
      });
    }, intervalMs);
    this.registry.addInterval(this.timerName, timer);
  }

  beforeApplicationShutdown(): void {
    if (this.registry?.doesExist('interval', this.timerName)) {
      this.registry.deleteInterval(this.timerName);
    }
  }

  private get timerName(): string {
    return purgeTimerName(this.options.tableName);
  }
}
