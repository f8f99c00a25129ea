/** The outbox's state in the store, sampled with the store's figures. */
export interface OutboxSample {
  /** The age of the oldest message not dispatched yet (dead letters aside); 0 when every message was sent. */
  readonly lagMs: number;
  /** Messages parked as dead letters. */
  readonly deadLetters: number;
}
