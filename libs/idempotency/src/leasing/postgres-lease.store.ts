import type { StoreQuery } from '../dialects/store-dialect.js';
import type { RecordedResponse } from '../claiming/claim.js';
import type { LeaseAttempt, LeaseKey, LeaseRequest, LeaseStore } from './lease-store.js';
import { heldBy, type LeaseRow } from './lease-row.js';
import { leaseClaimSql, leaseCompleteSql, leaseEntrySql, leaseExtendSql, leaseReleaseSql } from './postgres-lease.queries.js';


/**
 * Leases in the processed-messages table: a row whose `lease_token` is set is leased until
 * `lease_expires_at`; a row without one is completed (as every row of the transactional mode is).
 * Each operation is one parameterised statement in its own transaction, by the database's clock,
 * so it works behind PgBouncer in transaction mode.
 */
export class PostgresLeaseStore implements LeaseStore {
  constructor(
    private readonly join: { readonly query: StoreQuery },
    private readonly tableName: string,
  ) {}

  async claim(request: LeaseRequest, token: string): Promise<LeaseAttempt> {
    // A new row, or a row whose lease expired and whose fingerprint matches: the lease is ours.
    const { rows: claimed } = await this.join.query<{ took_over: boolean }>(leaseClaimSql(this.tableName), [
      request.consumer,
      request.key,
      request.sender,
      request.fingerprint,
      request.retentionMs,
      token,
      request.leaseMs,
    ]);
    if (claimed.length === 1) {
      return { kind: 'claimed', tookOver: claimed[0].took_over };
    }
    const {
      rows: [found],
    } = await this.join.query<LeaseRow>(leaseEntrySql(this.tableName), [request.consumer, request.key]);
    if (!found) {
      // Released between the two statements: try again.
      return this.claim(request, token);
    }
    return heldBy(found);
  }

  async complete(request: LeaseRequest, token: string, response: RecordedResponse): Promise<boolean> {
    const { rowCount } = await this.join.query(leaseCompleteSql(this.tableName), [request.consumer, request.key, token, response.status, response.headers === null ? null : JSON.stringify(response.headers), response.body, request.retentionMs]);
    return rowCount === 1;
  }

  async release({ consumer, key }: LeaseKey, token: string): Promise<boolean> {
    const { rowCount } = await this.join.query(leaseReleaseSql(this.tableName), [consumer, key, token]);
    return rowCount === 1;
  }

  async extend({ consumer, key }: LeaseKey, token: string, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.join.query(leaseExtendSql(this.tableName), [consumer, key, token, leaseMs]);
    return rowCount === 1;
  }
}
