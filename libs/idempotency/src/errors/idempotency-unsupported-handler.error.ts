import { IdempotencyError } from './idempotency.error.js';

/**
 * `@IdempotentHandler()` is on a handler whose answer cannot be recorded and replayed (an `@Sse()`
 * stream, a GraphQL query), or outside an HTTP controller, a message handler and a GraphQL
 * resolver (a WebSocket gateway). Thrown at start-up, naming the handler; the application does not start.
 */
export class IdempotencyUnsupportedHandlerError extends IdempotencyError {
  override readonly name = 'IdempotencyUnsupportedHandlerError';

  /** @param handler The handler, as `Class.method`. */
  constructor(
    message: string,
    readonly handler: string,
  ) {
    super(message);
  }
}
