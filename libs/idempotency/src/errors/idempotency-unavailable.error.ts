import { IdempotencyError } from './idempotency.error.js';

/**
 * The database gave no connection in time: the pool stayed busy for the module's
 * `connectionTimeout`, or the server could not be reached. Nothing was claimed. HTTP 503 with
 * `Retry-After`; RabbitMQ: retried after a delay.
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
