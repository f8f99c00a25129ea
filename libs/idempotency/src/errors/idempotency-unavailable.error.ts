import { IdempotencyError } from './idempotency.error.js';

/**
 * The database gave no connection in time: the pool stayed busy for the module's
 * `connectionTimeout`, or the server could not be reached; nothing was claimed. Or the claim's
 * connection was lost while its handler ran; nothing was committed. HTTP 503 with `Retry-After`;
 * a message: retried after a delay.
 */
export class IdempotencyUnavailableError extends IdempotencyError {
  override readonly name = 'IdempotencyUnavailableError';

  constructor(
    message: string,
    readonly consumer: string,
    readonly key: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
