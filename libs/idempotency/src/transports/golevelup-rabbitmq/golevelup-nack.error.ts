import { IdempotencyError } from '../../errors/idempotency.errors.js';
import { golevelupMessages } from './golevelup.messages.js';

/**
 * A golevelup handler answered `Nack`: it refused the message, so its claim rolls back and the
 * module settles the message (`requeue: true` counts as a failed attempt; `false` dead-letters it).
 * Internal: the module answers golevelup with a `Nack` of its own, never with this error.
 */
export class GolevelupNackError extends IdempotencyError {
  override readonly name = 'GolevelupNackError';

  constructor(readonly requeue: boolean) {
    super(golevelupMessages.handlerNacked(requeue));
  }
}
