import type { OnApplicationBootstrap } from '@nestjs/common';
import type { IdempotencySchemaError } from '../errors/idempotency.errors.js';

/**
 * A check of the schema at application bootstrap: the application does not start when
 * `inspect()` finds something missing, and `passed()` tells what reads the table on a timer
 * whether it may, so that the schema error is the first word on a store that lacks something.
 * @internal
 */
export abstract class SchemaBootCheck implements OnApplicationBootstrap {
  private settle!: (passed: boolean) => void;
  private readonly settled = new Promise<boolean>((resolve) => (this.settle = resolve));

  /** What lacks now, as the error to report; undefined when nothing lacks. Throws when the catalogue cannot be read. */
  abstract inspect(): Promise<IdempotencySchemaError | undefined>;

  /** What to learn before the check at bootstrap (the handlers discovered, say). */
  protected prepare(): void {}

  /**
   * `after`: the check this one comes after. This one does not check at all when that one refused
   * the start already, so that its error is the one reported.
   */
  constructor(private readonly after?: SchemaBootCheck) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.after && !(await this.after.passed())) {
      this.settle(false);
      return;
    }
    this.prepare();
    const problem = await this.inspect().catch((error: unknown) => {
      this.settle(false);
      throw error;
    });
    this.settle(problem === undefined);
    if (problem) {
      throw problem;
    }
  }

  /** Settles once the check at bootstrap has run: true when nothing lacks, false when the application refuses to start. */
  passed(): Promise<boolean> {
    return this.settled;
  }
}
