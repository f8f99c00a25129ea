import type { BeforeApplicationShutdown, OnApplicationBootstrap } from '@nestjs/common';

/** When a repeating task runs: every `intervalMs`, the first run at once with `now`, else an interval after bootstrap. @internal */
export interface TaskSchedule {
  readonly intervalMs: number;
  readonly now: boolean;
}

/**
 * A task that runs again and again from application bootstrap to shutdown, each run starting
 * `intervalMs` after the previous one settled, so runs never overlap. The timer does not keep the
 * process alive; `run()` handles its own errors. The purge's timer and the samplers are such tasks.
 * @internal
 */
export abstract class RepeatingTask implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private timer: NodeJS.Timeout | undefined;
  private intervalMs = 0;
  private started = false;
  private stopped = false;

  /** When to run, decided at bootstrap (it may wait, for a check of the schema say); null to run nothing. */
  protected abstract schedule(): TaskSchedule | null | Promise<TaskSchedule | null>;

  /** One run; it handles its own errors. */
  protected abstract run(): Promise<void>;

  /** True from the start of the runs to shutdown. */
  get isScheduled(): boolean {
    return this.started && !this.stopped;
  }

  async onApplicationBootstrap(): Promise<void> {
    const schedule = await this.schedule();
    // A shutdown may have begun while the schedule was being decided.
    if (schedule === null || this.stopped) {
      return;
    }
    this.intervalMs = schedule.intervalMs;
    this.started = true;
    if (schedule.now) {
      void this.tick();
    } else {
      this.next();
    }
  }

  beforeApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private next(): void {
    if (!this.stopped) {
      this.timer = setTimeout(() => void this.tick(), this.intervalMs).unref();
    }
  }

  private async tick(): Promise<void> {
    try {
      await this.run();
    } finally {
      this.next();
    }
  }
}
