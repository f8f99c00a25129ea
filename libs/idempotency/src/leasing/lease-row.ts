import type { LeaseAttempt } from './lease-store.js';

/** The processed-messages row of a leased or completed message, as the stores on the table read it. @internal */
export interface LeaseRow {
  fingerprint: string | null;
  lease_token: string | null;
  response_status: number | null;
  response_headers: Record<string, string | string[]> | null;
  response_body: Buffer | null;
}

/** What a claim that did not take the lease found in `row`: a twin's live lease, or its completed response. @internal */
export function heldBy(row: LeaseRow): LeaseAttempt {
  if (row.lease_token !== null) {
    return { kind: 'leased', fingerprint: row.fingerprint };
  }
  return { kind: 'completed', fingerprint: row.fingerprint, response: { status: row.response_status, headers: row.response_headers, body: row.response_body } };
}
