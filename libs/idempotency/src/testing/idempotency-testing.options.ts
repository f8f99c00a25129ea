import type { EntityManager } from '../optional/typeorm-types.js';

/** What `IdempotencyContext` answers under `IdempotencyTestingModule`. */
export interface IdempotencyTestingOptions {
  /**
   * What `IdempotencyContext.manager` returns: a fake of your own, or the `EntityManager` of a
   * test database. Without it, reading `manager` throws `IdempotencyContextError`.
   */
  manager?: EntityManager;
  /**
   * `IdempotencyContext.key`.
   * @default 'test-key'
   */
  key?: string;
  /**
   * `IdempotencyContext.consumer`.
   * @default 'test-consumer'
   */
  consumer?: string;
  /**
   * `IdempotencyContext.sender`.
   * @default 'test-sender'
   */
  sender?: string;
  /**
   * `IdempotencyContext.downstreamKey`.
   * @default the key the module derives from `consumer` and `key` (64 hexadecimal characters)
   */
  downstreamKey?: string;
}
