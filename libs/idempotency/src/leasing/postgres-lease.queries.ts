/**
 * The SQL of the PostgreSQL lease store, each a parameterised statement on the processed-messages
 * table. `table` is a validated plain identifier.
 */

/**
 * Takes the lease: inserts the row, or takes over a row whose lease expired and whose fingerprint
 * matches. `$1` consumer, `$2` key, `$3` sender, `$4` fingerprint, `$5` retention (ms), `$6` token,
 * `$7` lease (ms). Answers one row (`took_over`) when the lease is the caller's, none otherwise.
 */
export function leaseClaimSql(table: string): string {
  return `INSERT INTO "${table}" (consumer, message_id, sender, fingerprint, expires_at, lease_token, lease_expires_at)
       VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond', $6, now() + $7 * interval '1 millisecond')
       ON CONFLICT ON CONSTRAINT "${table}_pkey" DO UPDATE
         SET sender = EXCLUDED.sender, expires_at = EXCLUDED.expires_at,
             lease_token = EXCLUDED.lease_token, lease_expires_at = EXCLUDED.lease_expires_at
         WHERE "${table}".lease_token IS NOT NULL AND "${table}".lease_expires_at < now()
           AND "${table}".fingerprint IS NOT DISTINCT FROM EXCLUDED.fingerprint
       RETURNING (xmax <> 0) AS took_over`;
}

/** Reads the row that holds a message (`$1` consumer, `$2` key): its fingerprint, lease and recorded response. */
export function leaseEntrySql(table: string): string {
  return `SELECT fingerprint, lease_token, response_status, response_headers, response_body FROM "${table}" WHERE consumer = $1 AND message_id = $2`;
}

/** Completes the lease of token `$3`: records the response (`$4` status, `$5` headers, `$6` body) and keeps the row for `$7` ms. */
export function leaseCompleteSql(table: string): string {
  return `UPDATE "${table}" SET lease_token = NULL, lease_expires_at = NULL, response_status = $4,
         response_headers = $5, response_body = $6, expires_at = now() + $7 * interval '1 millisecond'
       WHERE consumer = $1 AND message_id = $2 AND lease_token = $3`;
}

/** Deletes the row while token `$3` holds its lease. */
export function leaseReleaseSql(table: string): string {
  return `DELETE FROM "${table}" WHERE consumer = $1 AND message_id = $2 AND lease_token = $3`;
}

/** Extends the lease of token `$3` to `$4` ms from now. */
export function leaseExtendSql(table: string): string {
  return `UPDATE "${table}" SET lease_expires_at = now() + $4 * interval '1 millisecond'
       WHERE consumer = $1 AND message_id = $2 AND lease_token = $3`;
}
