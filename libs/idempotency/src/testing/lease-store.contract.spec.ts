import type { RecordedResponse } from '../claiming/claim.js';
import type { LeaseAttempt, LeaseKey, LeaseRequest, LeaseStore } from '../leasing/lease-store.js';
import { leaseStoreContract } from './lease-store.contract.js';

interface Entry {
  token?: string;
  fingerprint: string | null;
  response?: RecordedResponse;
  /** When a lease ends; a completed entry lives on (the tests never outlast a retention). */
  leaseExpiresAt: number;
}

/**
 * A store in memory, right by the contract unless it has a flaw: `unfenced`, its holders' tokens
 * are not checked on completion; `expiry-forgets`, a lease that expires is forgotten at once, as a
 * key that expires with its lease would be.
 */
class MemoryLeaseStore implements LeaseStore {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly flaw?: 'unfenced' | 'expiry-forgets') {}

  async claim(request: LeaseRequest, token: string): Promise<LeaseAttempt> {
    const entry = this.entry(request);
    const expired = entry?.token !== undefined && entry.leaseExpiresAt <= Date.now();
    if (!entry || (expired && entry.fingerprint === request.fingerprint)) {
      this.entries.set(this.id(request), { token, fingerprint: request.fingerprint, leaseExpiresAt: Date.now() + request.leaseMs });
      return { kind: 'claimed', tookOver: entry !== undefined };
    }
    return entry.response
      ? { kind: 'completed', fingerprint: entry.fingerprint, response: entry.response }
      : { kind: 'leased', fingerprint: entry.fingerprint };
  }

  async complete(request: LeaseRequest, token: string, response: RecordedResponse): Promise<boolean> {
    const entry = this.holding(request, token) ?? (this.flaw === 'unfenced' ? this.entry(request) : undefined);
    if (!entry || entry.response) {
      return false;
    }
    Object.assign(entry, { token: undefined, response });
    return true;
  }

  async release(key: LeaseKey, token: string): Promise<boolean> {
    return this.holding(key, token) !== undefined && this.entries.delete(this.id(key));
  }

  async extend(key: LeaseKey, token: string, leaseMs: number): Promise<boolean> {
    const entry = this.holding(key, token);
    if (entry) {
      entry.leaseExpiresAt = Date.now() + leaseMs;
    }
    return entry !== undefined;
  }

  private holding(key: LeaseKey, token: string): Entry | undefined {
    const entry = this.entry(key);
    return entry?.token === token ? entry : undefined;
  }

  private entry(key: LeaseKey): Entry | undefined {
    const entry = this.entries.get(this.id(key));
    if (this.flaw === 'expiry-forgets' && entry?.token !== undefined && entry.leaseExpiresAt <= Date.now()) {
      this.entries.delete(this.id(key));
      return undefined;
    }
    return entry;
  }

  private id(key: LeaseKey): string {
    return JSON.stringify([key.consumer, key.key]);
  }
}

describe('leaseStoreContract', () => {
  const correct = new MemoryLeaseStore();
  for (const check of leaseStoreContract(() => correct)) {
    it(`passes on a store that keeps it: ${check.name}`, check.run);
  }

  async function failedChecks(store: LeaseStore): Promise<string[]> {
    const failures: string[] = [];
    for (const check of leaseStoreContract(() => store)) {
      await check.run().catch(() => failures.push(check.name));
    }
    return failures;
  }

  it('fails on a store whose holders complete without their token being checked', async () => {
    expect(await failedChecks(new MemoryLeaseStore('unfenced'))).toEqual([
      'a token that does not hold the lease cannot complete, release or extend it',
      'an expired lease is taken over, and its old holder is fenced: it can no longer complete, extend or release',
    ]);
  });

  it('fails on a store that forgets a lease when it expires, refusing a holder that nobody took over', async () => {
    expect(await failedChecks(new MemoryLeaseStore('expiry-forgets'))).toEqual([
      'an expired lease is taken over, and its old holder is fenced: it can no longer complete, extend or release',
      'a holder whose lease expired with nobody taking it over still completes it (or extends it): expired is not lost',
      'an expired lease is not taken over by a delivery with another fingerprint: it finds the lease, with its fingerprint',
    ]);
  });
});
