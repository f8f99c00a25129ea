import type { ClaimSql } from '../claiming/claim.queries.js';
import type { ClaimRequest } from '../claiming/claim.js';

/**
 * How long the message's row under the consumer's own name is kept yet, in milliseconds from the
 * transaction's start, both by the database's clock (so no other clock is compared with it). Sent
 * beside the twin's read, in its round trip.
 */
export function recordExpiryStatement({ table, literal }: ClaimSql, request: ClaimRequest): string {
  return (
    `SELECT (extract(epoch FROM expires_at - now()) * 1000)::float8 AS expires_in_ms FROM "${table}" ` +
    `WHERE consumer = ${literal(request.consumer)} AND message_id = ${literal(request.key)}`
  );
}

/** A row of `recordExpiryStatement`. */
export interface RecordExpiry {
  expires_in_ms: number;
}
