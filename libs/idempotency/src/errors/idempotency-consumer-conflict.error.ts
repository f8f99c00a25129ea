import { errorMessages } from './error.messages.js';
import { IdempotencyError } from './idempotency.error.js';

/**
 * Two handlers claim the same consumer name, so each would take the other's processed ids for its
 * own and skip messages it never handled. Thrown at start-up; the application does not start.
 */
export class IdempotencyConsumerConflictError extends IdempotencyError {
  override readonly name = 'IdempotencyConsumerConflictError';

  /**
   * @param handlers The handlers that share the name, as `Class.method`.
   * @param formerNames Each handler's default name before 0.3.0 (`Class.method`), where it has one:
   * naming it so keeps the ids it processed under that name.
   */
  constructor(
    readonly consumer: string,
    readonly handlers: readonly string[],
    formerNames: readonly (string | undefined)[] = [],
  ) {
    super(errorMessages.consumerConflict(consumer, handlers, formerNames));
  }
}
