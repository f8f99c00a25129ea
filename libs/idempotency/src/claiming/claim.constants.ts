/**
 * How long a claim waits for an uncommitted twin before answering "in flight" under the `reject`
 * policy: long enough for a twin that is about to commit to be replayed instead of refused. Each
 * attempt of a `wait` twin waits as long, then lets go of its connection before trying again.
 */
export const REJECT_LOCK_TIMEOUT_MS = 50;

/** The first pause of a `wait` twin between two attempts on a twin of another process; doubles up to the next. */
export const TWIN_POLL_FIRST_MS = 50;
export const TWIN_POLL_MAX_MS = 1_000;

/** PostgreSQL error codes the claim reacts to. */
export const PG_IN_FAILED_TRANSACTION = '25P02';
/** A statement that needs a transaction block ran outside one. */
export const PG_NO_ACTIVE_TRANSACTION = '25P01';
export const PG_UNDEFINED_FUNCTION = '42883';
export const PG_UNIQUE_VIOLATION = '23505';
/** SQLSTATE class 23: a constraint refused a write (unique, foreign key, check, exclusion). */
export const PG_INTEGRITY_CONSTRAINT_CLASS = '23';
export const PG_TRANSIENT_ERROR_CODES: ReadonlySet<string> = new Set(['40001', '40P01']);

/**
 * SQLSTATEs of a connection the server ended (admin_shutdown, as `pg_terminate_backend()` does;
 * crash_shutdown; cannot_connect_now) besides class 08, connection exceptions.
 */
export const PG_CONNECTION_ENDED_CODES: ReadonlySet<string> = new Set(['57P01', '57P02', '57P03']);
