import { errorMessages } from './error.messages.js';
import { IdempotencyError } from './idempotency.error.js';

/**
 * How long a lease-mode handler held its lease, for the message of IdempotencyLeaseLostError.
 */
export interface LeaseHeld {
  /** From the claim to the refused completion (or extension). */
  readonly heldMs: number;
  /** The handler's `lease`. */
  readonly leaseMs: number;
  /** The handler's `renewLeaseFor`; 0: never renewed. */
  readonly renewLeaseForMs: number;
}

/**
 * Lease mode: the handler's lease expired and another delivery took the message over, so this
 * holder can no longer complete (or extend) it: its result is not recorded. HTTP 409 with
 * `Retry-After` (the retry gets the answer of the holder that took over); RabbitMQ: retried.
 * A lease that expired with nobody taking it over is no loss: its holder still completes.
 */
export class IdempotencyLeaseLostError extends IdempotencyError {
  override readonly name = 'IdempotencyLeaseLostError';

  constructor(
    readonly consumer: string,
    readonly key: string,
    /** How long the handler held the lease, when known. */
    readonly held?: LeaseHeld,
  ) {
    super(errorMessages.leaseLost(consumer, key, held));
  }
}
