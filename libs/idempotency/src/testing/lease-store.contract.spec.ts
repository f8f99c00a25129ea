import type { RecordedResponse } from '../claiming/claim.js';
import type { LeaseAttempt, LeaseKey, LeaseRequest, LeaseStore } from '../leasing/lease-store.js';
import { leaseStoreContract } from './lease-store.contract.js';

interface Entry {
  token?: string;
  fingerprint: string | null;
  response?: RecordedResponse;
  expiresAt: number;
}

/** A store in memory, right by the contract unless `fenced` is false: then its holders' tokens are not checked on completion. */
class MemoryLeaseStore implements LeaseStore {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly fenced = true) {}

  async claim(request: LeaseRequest, token: string): Promise<LeaseAttempt> {
    const id = JSON.stringify([request.consumer, request.key]);
    const entry = this.entries.get(id);
    if (!entry || entry.expiresAt <= Date.now()) {
      this.entries.set(id, { token, fingerprint: request.fingerprint, expiresAt: Date.now() + request.leaseMs });
      return { kind: 'claimed', tookOver: entry !== undefined };
    }
    return entry.response
      ? { kind: 'completed', fingerprint: entry.fingerprint, response: entry.response }
      : { kind: 'leased', fingerprint: entry.fingerprint };
  }

  async complete(request: LeaseRequest, token: string, response: RecordedResponse): Promise<boolean> {
    const entry = this.holding(request, token) ?? (this.fenced ? undefined : this.entries.get(JSON.stringify([request.consumer, request.key])));
    if (!entry || entry.response) {
      return false;
    }
    Object.assign(entry, { token: undefined, response, expiresAt: Date.now() + request.retentionMs });
    return true;
  }

  async release(key: LeaseKey, token: string): Promise<boolean> {
    return this.holding(key, token) !== undefined && this.entries.delete(JSON.stringify([key.consumer, key.key]));
  }

  async extend(key: LeaseKey, token: string, leaseMs: number): Promise<boolean> {
    const entry = this.holding(key, token);
    if (entry) {
      entry.expiresAt = Date.now() + leaseMs;
    }
    return entry !== undefined;
  }

  private holding(key: LeaseKey, token: string): Entry | undefined {
    const entry = this.entries.get(JSON.stringify([key.consumer, key.key]));
    return entry && entry.token === token && entry.expiresAt > Date.now() ? entry : undefined;
  }
}

describe('leaseStoreContract', () => {
  const correct = new MemoryLeaseStore();
  for (const check of leaseStoreContract(() => correct)) {
    it(`passes on a store that keeps it: ${check.name}`, check.run);
  }

  it('fails on a store whose holders complete without their token being checked', async () => {
    const broken = new MemoryLeaseStore(false);
    const failures: string[] = [];
    for (const check of leaseStoreContract(() => broken)) {
      await check.run().catch(() => failures.push(check.name));
    }
    expect(failures).toEqual([
      'a token that does not hold the lease cannot complete, release or extend it',
      'an expired lease is taken over, and its old holder is fenced: it can no longer complete, extend or release',
    ]);
  });
});
