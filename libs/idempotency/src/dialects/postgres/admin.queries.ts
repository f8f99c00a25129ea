/** The SQL of the operators' service on the processed-messages table. `table` is a validated plain identifier. */

/** The columns an operator reads of the rows; with `includeBody`, the recorded headers and body too. */
function adminRowsSql(table: string, includeBody: boolean): string {
  return (
    `SELECT consumer, message_id, sender, processed_at, expires_at, lease_token, lease_expires_at, ` +
    `lease_expires_at < now() AS lease_expired, response_status, octet_length(response_body) AS response_bytes` +
    `${includeBody ? ', response_headers, response_body' : ''} FROM "${table}"`
  );
}

/** One message's row: `$1` consumer, `$2` message id. */
export function adminLookupSql(table: string, includeBody: boolean): string {
  return `${adminRowsSql(table, includeBody)} WHERE consumer = $1 AND message_id = $2`;
}

/** A consumer's newest rows, before `$2` when it is not null, newest first. */
export function adminListSql(table: string, limit: number): string {
  return (
    `${adminRowsSql(table, false)} WHERE consumer = $1 AND ($2::timestamptz IS NULL OR processed_at < $2::timestamptz)
       ORDER BY processed_at DESC LIMIT ${limit}`
  );
}

/** Deletes a message's row unless a live lease holds it, or (`$3` true) in any case. */
export function adminForgetSql(table: string): string {
  return `DELETE FROM "${table}" WHERE consumer = $1 AND message_id = $2
             AND (lease_token IS NULL OR lease_expires_at < now() OR $3)`;
}

/** Deletes a message's row while a lease holds it: any lease, or (`$3` not null) the lease of that token. */
export function adminReleaseSql(table: string): string {
  return `DELETE FROM "${table}" WHERE consumer = $1 AND message_id = $2 AND lease_token IS NOT NULL
           AND ($3::uuid IS NULL OR lease_token = $3::uuid)`;
}
