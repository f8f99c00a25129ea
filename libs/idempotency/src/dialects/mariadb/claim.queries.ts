import type { ClaimOpening, ClaimSql, ClaimValues, ResponseValues } from '../store-dialect.js';
import { mariaDbErrno, MARIADB_DUPLICATE_ENTRY, MARIADB_LOCK_WAIT_TIMEOUT } from './mariadb-errors.js';

/**
 * The claim: a plain INSERT of the message's row. A twin's committed row answers 1062 (duplicate
 * entry), and the transaction goes on, to read the twin in; a twin's uncommitted row makes the
 * INSERT fail at once with 1205 (lock wait timeout; only the statement is rolled back). Never
 * `INSERT IGNORE`, which turns other errors (a key too long) into warnings. The lock wait is 0:
 * InnoDB counts it in whole seconds, and the module waits for an in-flight twin itself.
 */
function claimStatement({ table, literal }: ClaimSql, request: ClaimValues): string {
  const fingerprint = request.fingerprint === null ? 'NULL' : literal(request.fingerprint);
  return (
    `SET STATEMENT innodb_lock_wait_timeout = 0 FOR INSERT INTO \`${table}\` (consumer, message_id, sender, fingerprint, expires_at) ` +
    `VALUES (${literal(request.consumer)}, ${literal(request.key)}, ${literal(request.sender)}, ${fingerprint}, ` +
    `NOW(6) + INTERVAL ${request.retentionMs * 1000} MICROSECOND)`
  );
}

/** START TRANSACTION with the claim and `after`, in one round trip; a duplicate entry is a lost claim, its transaction still open. */
export async function beginClaim(connection: ClaimOpening, sql: ClaimSql, request: ClaimValues, after: string[]): Promise<boolean> {
  try {
    await connection.begin(request.isolationLevel, [claimStatement(sql, request), ...after]);
    return true;
  } catch (error) {
    if (mariaDbErrno(error) === MARIADB_DUPLICATE_ENTRY) {
      return false;
    }
    throw error;
  }
}

/** The claim's INSERT met a twin's uncommitted row: 1205. */
export function heldByTwin(error: unknown): boolean {
  return mariaDbErrno(error) === MARIADB_LOCK_WAIT_TIMEOUT;
}

/**
 * Reads the committed twin's row. `LOCK IN SHARE MODE` reads the latest committed row, which a
 * plain read under REPEATABLE READ would not see from an earlier snapshot. A store on MariaDB
 * holds no row under a consumer's name from before 0.3.0, so the former name is not read.
 */
export function twinStatement({ table, literal }: ClaimSql, request: ClaimValues): string {
  return (
    `SELECT fingerprint, response_status, response_headers, response_body, lease_token IS NOT NULL AS leased FROM \`${table}\` ` +
    `WHERE consumer = ${literal(request.consumer)} AND message_id = ${literal(request.key)} LOCK IN SHARE MODE`
  );
}

/** How long the twin's row is kept yet, in ms by the database's clock. */
export function recordExpiryStatement({ table, literal }: ClaimSql, request: ClaimValues): string {
  return (
    `SELECT CAST(TIMESTAMPDIFF(MICROSECOND, NOW(6), expires_at) / 1000 AS DOUBLE) AS expires_in_ms FROM \`${table}\` ` +
    `WHERE consumer = ${literal(request.consumer)} AND message_id = ${literal(request.key)}`
  );
}

/** Records `response` on the claim's row, with the COMMIT; nothing for an empty response. */
export function recordStatements({ table, literal }: ClaimSql, request: ClaimValues, response: ResponseValues): string[] {
  const { status, headers, body } = response;
  if (status === null && headers === null && body === null) {
    return [];
  }
  const headersSql = headers === null ? 'NULL' : literal(JSON.stringify(headers));
  const bodySql = body === null ? 'NULL' : body.length === 0 ? "''" : `X'${body.toString('hex')}'`;
  return [
    `UPDATE \`${table}\` SET response_status = ${status ?? 'NULL'}, response_headers = ${headersSql}, response_body = ${bodySql} ` +
      `WHERE consumer = ${literal(request.consumer)} AND message_id = ${literal(request.key)}`,
  ];
}
