import { AsyncLocalStorage } from 'node:async_hooks';
import type { EntityManager } from '../optional/typeorm-types.js';
import { IdempotencyContext } from '../context/idempotency.context.js';
import { type Duration, MAX_TIMER_MS, toMilliseconds } from '../duration/duration.js';
import { IdempotencyContextError } from '../errors/idempotency.errors.js';
import { downstreamKey } from '../keys/downstream-key.js';
import { testingMessages } from './testing.messages.js';
import type { IdempotencyTestingOptions } from './idempotency-testing.options.js';

/**
 * `IdempotencyContext` under `IdempotencyTestingModule`: active everywhere (in a handler called
 * directly as well as through a request), with the fixed values of the module's options.
 * @internal
 */
export class TestingIdempotencyContext extends IdempotencyContext {
  private readonly fixed: Required<Omit<IdempotencyTestingOptions, 'manager'>>;
  private readonly testManager: EntityManager | undefined;

  constructor(options: IdempotencyTestingOptions) {
    super(new AsyncLocalStorage());
    const key = options.key ?? 'test-key';
    const consumer = options.consumer ?? 'test-consumer';
    this.fixed = {
      key,
      consumer,
      sender: options.sender ?? 'test-sender',
      downstreamKey: options.downstreamKey ?? downstreamKey({ consumer, key }),
    };
    this.testManager = options.manager;
  }

  override get isActive(): boolean {
    return true;
  }

  override get manager(): EntityManager {
    if (!this.testManager) {
      throw new IdempotencyContextError(testingMessages.testingManagerMissing());
    }
    return this.testManager;
  }

  override get key(): string {
    return this.fixed.key;
  }

  override get consumer(): string {
    return this.fixed.consumer;
  }

  override get sender(): string {
    return this.fixed.sender;
  }

  override get downstreamKey(): string {
    return this.fixed.downstreamKey;
  }

  /** Checks the duration as the module does, and holds no lease to extend. */
  override async extendLease(duration?: Duration): Promise<void> {
    if (duration !== undefined) {
      toMilliseconds('extendLease duration', duration, MAX_TIMER_MS);
    }
  }
}
