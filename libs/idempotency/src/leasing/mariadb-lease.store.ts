import type { RecordedResponse } from '../claiming/claim.js';
import type { StoreQuery } from '../dialects/store-dialect.js';
import { MARIADB_DUPLICATE_ENTRY, mariaDbErrno } from '../dialects/mariadb/mariadb-errors.js';
import type { LeaseAttempt, LeaseKey, LeaseRequest, LeaseStore } from './lease-store.js';
import { heldBy, type LeaseRow } from './lease-row.js';


/**
 * Leases in the processed-messages table on MariaDB, as `PostgresLeaseStore` keeps them there: a
 * row whose `lease_token` is set is leased until `lease_expires_at`. MariaDB has no
 * `INSERT ... ON CONFLICT ... WHERE`: the claim is an INSERT, and on a duplicate entry an UPDATE
 * that takes over only an expired lease of the same fingerprint; each statement commits on its own,
 * by the database's clock.
 */
export class MariaDbLeaseStore implements LeaseStore {
  constructor(
    private readonly join: { readonly query: StoreQuery },
    private readonly table: string,
  ) {}

  async claim(request: LeaseRequest, token: string): Promise<LeaseAttempt> {
    const { consumer, key, sender, fingerprint, retentionMs, leaseMs } = request;
    try {
      await this.join.query(
        `INSERT INTO \`${this.table}\` (consumer, message_id, sender, fingerprint, expires_at, lease_token, lease_expires_at) ` +
          'VALUES ($1, $2, $3, $4, NOW(6) + INTERVAL $5 * 1000 MICROSECOND, $6, NOW(6) + INTERVAL $7 * 1000 MICROSECOND)',
        [consumer, key, sender, fingerprint, retentionMs, token, leaseMs],
      );
      return { kind: 'claimed', tookOver: false };
    } catch (error) {
      if (mariaDbErrno(error) !== MARIADB_DUPLICATE_ENTRY) {
        throw error;
      }
    }
    const { rowCount } = await this.join.query(
      `UPDATE \`${this.table}\` SET sender = $3, expires_at = NOW(6) + INTERVAL $5 * 1000 MICROSECOND, lease_token = $6, ` +
        'lease_expires_at = NOW(6) + INTERVAL $7 * 1000 MICROSECOND ' +
        'WHERE consumer = $1 AND message_id = $2 AND lease_token IS NOT NULL AND lease_expires_at < NOW(6) AND fingerprint <=> $4',
      [consumer, key, sender, fingerprint, retentionMs, token, leaseMs],
    );
    if (rowCount === 1) {
      return { kind: 'claimed', tookOver: true };
    }
    const {
      rows: [found],
    } = await this.join.query<LeaseRow>(
      `SELECT fingerprint, lease_token, response_status, response_headers, response_body FROM \`${this.table}\` WHERE consumer = $1 AND message_id = $2`,
      [consumer, key],
    );
    if (!found) {
      // Released between the statements: try again.
      return this.claim(request, token);
    }
    return heldBy(found);
  }

  async complete(request: LeaseRequest, token: string, response: RecordedResponse): Promise<boolean> {
    const { rowCount } = await this.join.query(
      `UPDATE \`${this.table}\` SET lease_token = NULL, lease_expires_at = NULL, response_status = $4, response_headers = $5, response_body = $6, ` +
        'expires_at = NOW(6) + INTERVAL $7 * 1000 MICROSECOND WHERE consumer = $1 AND message_id = $2 AND lease_token = $3',
      [request.consumer, request.key, token, response.status, response.headers === null ? null : JSON.stringify(response.headers), response.body, request.retentionMs],
    );
    return rowCount === 1;
  }

  async release({ consumer, key }: LeaseKey, token: string): Promise<boolean> {
    const { rowCount } = await this.join.query(`DELETE FROM \`${this.table}\` WHERE consumer = $1 AND message_id = $2 AND lease_token = $3`, [consumer, key, token]);
    return rowCount === 1;
  }

  async extend({ consumer, key }: LeaseKey, token: string, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.join.query(
      `UPDATE \`${this.table}\` SET lease_expires_at = NOW(6) + INTERVAL $4 * 1000 MICROSECOND WHERE consumer = $1 AND message_id = $2 AND lease_token = $3`,
      [consumer, key, token, leaseMs],
    );
    return rowCount === 1;
  }
}
