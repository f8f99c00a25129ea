export const MODULE_OPTIONS_TOKEN = 'IDEMPOTENCY:MODULE_OPTIONS';
export const RESOLVED_OPTIONS = Symbol('IDEMPOTENCY:RESOLVED_OPTIONS');
export const CLAIM_STORAGE = Symbol('IDEMPOTENCY:CLAIM_STORAGE');
export const HANDLER_OPTIONS_METADATA = 'IDEMPOTENCY:HANDLER_OPTIONS';

/**
 * How long a claim waits for an uncommitted twin before answering "in flight" under the `reject`
 * policy: long enough for a twin that is about to commit to be replayed instead of refused.
 */
export const REJECT_LOCK_TIMEOUT_MS = 50;

/** Seconds a client is told to wait (`Retry-After`) before retrying a 409 or 503. */
export const RETRY_AFTER_SECONDS = 1;

/** PostgreSQL error codes the claim reacts to. */
export const PG_LOCK_NOT_AVAILABLE = '55P03';
export const PG_TRANSIENT_ERROR_CODES: ReadonlySet<string> = new Set(['40001', '40P01']);
