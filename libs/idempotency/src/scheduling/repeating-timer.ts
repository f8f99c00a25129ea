/**
 * Runs `task` again and again, each run starting `intervalMs` after the previous one settled (so
 * runs never overlap), until `stop()`. The timer does not keep the process alive; `task` handles
 * its own errors.
 * @internal
 */
export class RepeatingTimer {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly intervalMs: number,
    private readonly task: () => Promise<void>,
  ) {}

  /** True from `start()` to `stop()`. */
  get isScheduled(): boolean {
    return this.timer !== undefined;
  }

  /** Starts the runs: the first one an interval from now, or at once with `now`. */
  start({ now = false }: { now?: boolean } = {}): void {
    if (now) {
      void this.run();
    } else {
      this.schedule();
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (!this.stopped) {
      this.timer = setTimeout(() => void this.run(), this.intervalMs).unref();
    }
  }

  private async run(): Promise<void> {
    try {
      await this.task();
    } finally {
      this.schedule();
    }
  }
}
