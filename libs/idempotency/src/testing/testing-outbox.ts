import { randomUUID } from 'node:crypto';
import { AsyncLocalStorage } from 'node:async_hooks';
import { IdempotencyOutboxError } from '../errors/idempotency.errors.js';
import { Outbox, type OutboxMessage } from '../outbox/outbox.js';
import { POSTGRES_DIALECT } from '../dialects/postgres/postgres.dialect.js';
import { outboxMessages } from '../outbox/outbox.messages.js';

/**
 * `Outbox` under `IdempotencyTestingModule`: nothing is written or sent; each message is kept, in
 * order, in `published`, for the test to read (`moduleRef.get(Outbox) as TestingOutbox`).
 */
export class TestingOutbox extends Outbox {
  /** What the code under test published, in order, each with its id (the given one, or a UUID). */
  readonly published: (OutboxMessage & { readonly id: string })[] = [];

  /** @internal `IdempotencyTestingModule` constructs it. */
  constructor() {
    super(null, new AsyncLocalStorage(), { dialect: POSTGRES_DIALECT });
  }

  /**
   * Keeps `message` (whatever transaction is given); answers its id.
   * @throws IdempotencyOutboxError when a message of its id was published before, as the outbox table refuses it.
   */
  override async publish(message: OutboxMessage): Promise<string> {
    const id = message.id ?? randomUUID();
    if (this.published.some((published) => published.id === id)) {
      throw new IdempotencyOutboxError(outboxMessages.idTaken(id));
    }
    this.published.push({ ...message, id });
    return id;
  }
}
