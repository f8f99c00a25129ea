import { IdempotencySchemaError } from '../errors/idempotency-schema.error.js';
import { functionMissing } from '../schema/store-schema.js';
import { IdempotencyTransactionAbortedError } from '../errors/idempotency-transaction-aborted.error.js';
import { IdempotencyTransientError } from '../errors/idempotency-transient.error.js';
import { claimMessages } from './claim.messages.js';
import { PG_IN_FAILED_TRANSACTION, PG_TRANSIENT_ERROR_CODES, PG_UNDEFINED_FUNCTION } from './claim.constants.js';
import type { ClaimRequest } from './claim.js';

/** The SQLSTATE of a pg error, also when TypeORM wrapped it in a QueryFailedError. */
export function postgresErrorCode(error: unknown): string | undefined {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown } } | undefined;
  const code = candidate?.driverError?.code ?? candidate?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Database errors that say what happened to the claim become typed errors: a serialization
 * failure or deadlock (a retry cures it), a statement refused because the transaction is aborted.
 * Anything else passes through unchanged.
 */
export function translateDatabaseError(error: unknown, request: Pick<ClaimRequest, 'consumer' | 'key'>): unknown {
  const code = postgresErrorCode(error);
  if (code && PG_TRANSIENT_ERROR_CODES.has(code)) {
    return new IdempotencyTransientError(claimMessages.transient(request.key, code), request.consumer, request.key, { cause: error });
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
