/** What is claimed: one message for one consumer. */
export interface Claim {
  readonly consumer: string;
  readonly key: string;
  readonly sender: string;
  /** SHA-256 of the payload; a duplicate with another fingerprint is a reused key. */
  readonly fingerprint: string;
  readonly retentionMs: number;
  /** How long to wait for an uncommitted twin before the delivery counts as in flight. */
  readonly lockTimeoutMs: number;
}

/** The response recorded with a processed claim and replayed to its duplicates. */
export interface RecordedResponse {
  /** The HTTP status; null for message handlers. */
  readonly status: number | null;
  /** The handler's result, as JSON. */
  readonly body: unknown;
}

/** How a delivery ended: the handler ran and committed, or a twin had already done so. */
export type ClaimOutcome<T> =
  | { readonly kind: 'processed'; readonly result: T }
  | { readonly kind: 'duplicate'; readonly response: RecordedResponse };
