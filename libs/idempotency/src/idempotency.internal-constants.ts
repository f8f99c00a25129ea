export const MODULE_OPTIONS_TOKEN = 'IDEMPOTENCY:MODULE_OPTIONS';
export const RESOLVED_OPTIONS = Symbol('IDEMPOTENCY:RESOLVED_OPTIONS');
export const CLAIM_STORAGE = Symbol('IDEMPOTENCY:CLAIM_STORAGE');
export const HANDLER_OPTIONS_METADATA = 'IDEMPOTENCY:HANDLER_OPTIONS';

/**
 * How long a claim waits for an uncommitted twin before answering "in flight" under the `reject`
 * policy: long enough for a twin that is about to commit to be replayed instead of refused. Each
 * attempt of a `wait` twin waits as long, then lets go of its connection before trying again.
 */
export const REJECT_LOCK_TIMEOUT_MS = 50;

/** The first pause of a `wait` twin between two attempts on a twin of another process; doubles up to the next. */
export const TWIN_POLL_FIRST_MS = 50;
export const TWIN_POLL_MAX_MS = 1_000;

/** A RabbitMQ retry waits at most this many times the handler's `retryDelay`. */
export const MAX_RETRY_DELAY_FACTOR = 64;

/** Seconds a client is told to wait (`Retry-After`) before retrying a 409 or 503. */
export const RETRY_AFTER_SECONDS = 1;

/** Distinct sender names counted apart in the metrics; the others are counted as `OTHER_SENDERS`. */
export const MAX_COUNTED_SENDERS = 100;
export const OTHER_SENDERS = '(other)';
/** The sender of handlers that name none. */
export const DEFAULT_SENDER = 'default';

/** PostgreSQL error codes the claim reacts to. */
export const PG_LOCK_NOT_AVAILABLE = '55P03';
export const PG_IN_FAILED_TRANSACTION = '25P02';
export const PG_UNDEFINED_FUNCTION = '42883';
export const PG_TRANSIENT_ERROR_CODES: ReadonlySet<string> = new Set(['40001', '40P01']);

/**
 * Nest metadata the module reads. Their values are Nest's own (`RouteParamtypes.RESPONSE` and
 * `.NEXT` of @nestjs/common; the pattern keys of @nestjs/microservices, which the module does not
 * import unless the application uses it); a unit spec checks them against Nest.
 */
export const RESPONSE_PARAMTYPE = 1;
export const NEXT_PARAMTYPE = 2;
export const PATTERN_METADATA = 'microservices:pattern';
export const PATTERN_HANDLER_METADATA = 'microservices:handler_type';
export const TRANSPORT_METADATA = 'microservices:transport';
/** Nest's `Transport.RMQ`. */
export const RMQ_TRANSPORT = 5;
