import { IdempotencyCommitRefusedError, IdempotencyError, IdempotencySchemaError, IdempotencyTransactionAbortedError, IdempotencyTransientError, IdempotencyUnavailableError } from '../errors/idempotency.errors.js';
import { functionMissing } from '../schema/store-schema.js';
import { claimMessages } from './claim.messages.js';
import { PG_CONNECTION_ENDED_CODES, PG_IN_FAILED_TRANSACTION, PG_INTEGRITY_CONSTRAINT_CLASS, PG_TRANSIENT_ERROR_CODES, PG_UNDEFINED_FUNCTION } from './claim.constants.js';
import type { ClaimRequest } from './claim.js';
import { postgresErrorCode } from '../dialects/postgres/postgres-errors.js';
import { MARIADB_DEADLOCK, MARIADB_LOCK_WAIT_TIMEOUT, mariaDbErrno } from '../dialects/mariadb/mariadb-errors.js';

/** MariaDB's deadlock (the transaction rolled back) and lock wait timeout (the statement rolled back): a retry cures both. */
const MARIADB_TRANSIENT_ERRNOS: ReadonlySet<number> = new Set([MARIADB_DEADLOCK, MARIADB_LOCK_WAIT_TIMEOUT]);

/** Node's errors of a socket the network cut or the server no longer answers on, which a driver passes on as they are. */
const SOCKET_LOST_CODES: ReadonlySet<string> = new Set(['ECONNRESET', 'EPIPE', 'ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Whether `error` says the claim's connection was lost: the server ended it, the network cut it
 * (node-postgres: "Connection terminated", or the socket's own error), or TypeORM released the query runner after its
 * connection failed (its runner's "Query runner already released", its entity manager's
 * "Database connection provided by a query runner was already released").
 */
function connectionLost(error: unknown, code: string | undefined): boolean {
  // mysql2 marks the errors after which its connection is gone (the server closed it, the network cut it).
  if ((error as { fatal?: unknown } | undefined)?.fatal === true) {
    return true;
  }
  if (code !== undefined) {
    return code.startsWith('08') || PG_CONNECTION_ENDED_CODES.has(code) || SOCKET_LOST_CODES.has(code);
  }
  return (
    (error instanceof Error &&
      (error.name === 'QueryRunnerAlreadyReleasedError' ||
        error.name === 'QueryRunnerProviderAlreadyReleasedError' ||
        error.message.startsWith('Connection terminated')))
  );
}

/**
 * Database errors that say what happened to the claim become typed errors: a serialization
 * failure or deadlock (a retry cures it), a statement refused because the transaction is aborted,
 * a connection lost mid-handler (its transaction with it). Anything else passes through unchanged.
 */
export function translateDatabaseError(error: unknown, request: Pick<ClaimRequest, 'consumer' | 'key'>): unknown {
  // The claim's own refusal, sent back through the driver's callback, which TypeORM wrapped in a QueryFailedError.
  const driverError = (error as { driverError?: unknown } | undefined)?.driverError;
  if (driverError instanceof IdempotencyError) {
    return driverError;
  }
  const code = postgresErrorCode(error);
  if (connectionLost(error, code)) {
    const reason = error instanceof Error ? error.message : String(error);
    return new IdempotencyUnavailableError(claimMessages.connectionLost(request.consumer, request.key, reason), request.consumer, request.key, { cause: error });
  }
  const errno = mariaDbErrno(error);
  if ((code && PG_TRANSIENT_ERROR_CODES.has(code)) || (errno !== undefined && MARIADB_TRANSIENT_ERRNOS.has(errno))) {
    const named = errno === undefined ? `PostgreSQL ${code}` : `MariaDB ${errno}`;
    return new IdempotencyTransientError(claimMessages.transient(request.key, named), request.consumer, request.key, { cause: error });
  }
  if (code === PG_IN_FAILED_TRANSACTION) {
    return new IdempotencyTransactionAbortedError(request.consumer, request.key, { cause: error });
  }
  return error;
}

/**
 * The error of a statement that called the store's function `which` (`<table>_claim` or
 * `<table>_record`) and found it gone: an IdempotencySchemaError that says how to recreate it;
 * undefined for any other error.
 */
export function functionDroppedError(error: unknown, table: string, which: 'claim' | 'record'): IdempotencySchemaError | undefined {
  if (postgresErrorCode(error) !== PG_UNDEFINED_FUNCTION) {
    return undefined;
  }
  const { missing, migrations } = functionMissing(table, which);
  return new IdempotencySchemaError(table, missing, migrations, { cause: error, droppedSinceStart: true });
}

/**
 * The error of a COMMIT that a constraint refused (an outbox message whose id is taken, a deferred
 * constraint): an IdempotencyCommitRefusedError, a definite failure; undefined for any other error.
 */
export function commitRefusedError(error: unknown, request: Pick<ClaimRequest, 'consumer' | 'key'>): IdempotencyCommitRefusedError | undefined {
  if (!postgresErrorCode(error)?.startsWith(PG_INTEGRITY_CONSTRAINT_CLASS)) {
    return undefined;
  }
  const { message, detail } = error as { message?: unknown; detail?: unknown };
  const reason = [message, detail].filter((part) => typeof part === 'string' && part !== '').join(': ');
  return new IdempotencyCommitRefusedError(request.consumer, request.key, reason, { cause: error });
}
