/** The token of the claim's slice of the module's options. @internal */
export const CLAIM_OPTIONS = Symbol('IDEMPOTENCY:CLAIM_OPTIONS');

/**
 * The claim's slice of the module's options, in milliseconds.
 * @internal
 */
export interface ResolvedClaimOptions {
  /** The processed-messages table. */
  tableName: string;
  /** How long a delivery whose handler uses `inFlight: 'wait'` waits for its twin. */
  inFlightWaitTimeoutMs: number;
  /** How long a delivery waits for a pooled connection. */
  connectionTimeoutMs: number;
}
