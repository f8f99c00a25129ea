import { IdempotencyError } from './idempotency.error.js';

/** A duration written with its unit: `'500ms'`, `'30s'`, `'15m'`, `'72h'`, `'7d'`. */
export type Duration = `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

/**
 * A handler forgets message ids before its sender stops redelivering them, so a late redelivery
 * would be processed again. Thrown at start-up; the application does not start.
 */
export class IdempotencyRetentionError extends IdempotencyError {
  override readonly name = 'IdempotencyRetentionError';

  /**
   * @param handler The handler, as `Class.method`.
   * @param sender The sender whose horizon the retention falls short of.
   */
  constructor(
    message: string,
    readonly handler: string,
    readonly retention: Duration,
    readonly sender: string,
    readonly redeliveryHorizon: Duration,
  ) {
    super(message);
  }
}
