import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ActiveClaim } from '../context/idempotency.context.js';
import { IdempotencyLeaseLostError } from '../errors/idempotency.errors.js';
import type { LeaseRenewalOutcome } from '../metrics/idempotency-metrics.service.js';
import type { LeaseStore } from './lease-store.js';
import { OpenLease } from './open-lease.js';

const RESPONSE = { status: 201, headers: {}, body: Buffer.from('{}') };

/** A store that answers every extension with `answer()` and keeps what it was asked, with the fake clock's time. */
function fakeStore(answer: () => Promise<boolean> = async () => true) {
  const extensions: { at: number; leaseMs: number }[] = [];
  const store: LeaseStore = {
    claim: async () => ({ kind: 'claimed', tookOver: false }),
    complete: async () => true,
    release: async () => true,
    extend: async (_key, _token, leaseMs) => {
      extensions.push({ at: performance.now(), leaseMs });
      return answer();
    },
  };
  return { store, extensions };
}

describe('OpenLease renews its lease while the handler runs', () => {
  const storage = new AsyncLocalStorage<ActiveClaim>();
  const request = {
    consumer: 'Payments.charge',
    formerConsumer: undefined,
    key: 'order-7',
    sender: 'shop',
    fingerprint: null,
    retentionMs: 60_000,
    waitForTwin: false,
    isolationLevel: undefined,
    savepoint: false,
    leaseMs: 300,
  };
  let warnings: string[];

  beforeEach(() => {
    jest.useFakeTimers();
    warnings = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
  });

  afterEach(() => {
    jest.restoreAllMocks();
    jest.useRealTimers();
  });

  function open(store: LeaseStore, forMs: number) {
    const counted: LeaseRenewalOutcome[] = [];
    const lease = new OpenLease(store, request, 'token', storage, () => undefined, { forMs, record: (outcome) => void counted.push(outcome) });
    return { lease, counted, claimedAt: performance.now() };
  }

  it('every third of the lease, up to the bound, the last renewal ending the lease at the bound', async () => {
    const { store, extensions } = fakeStore();
    const { counted, claimedAt } = open(store, 950);
    await jest.advanceTimersByTimeAsync(5_000);
    expect(extensions.map(({ at, leaseMs }) => [at - claimedAt, leaseMs])).toEqual([
      [100, 300],
      [200, 300],
      [300, 300],
      [400, 300],
      [500, 300],
      [600, 300],
      [700, 250],
    ]);
    expect(counted).toEqual(Array(7).fill('renewed'));
    expect(warnings).toEqual([]);
  });

  it('not at all with renewLeaseFor: false, nor with a bound within the lease', async () => {
    for (const forMs of [0, 300]) {
      const { store, extensions } = fakeStore();
      open(store, forMs);
      await jest.advanceTimersByTimeAsync(5_000);
      expect(extensions).toEqual([]);
    }
  });

  it('no more once the delivery settled', async () => {
    const { store, extensions } = fakeStore();
    const { lease } = open(store, 600_000);
    await jest.advanceTimersByTimeAsync(250);
    await lease.commit(RESPONSE);
    await jest.advanceTimersByTimeAsync(5_000);
    expect(extensions).toHaveLength(2);
  });

  it('a renewal refused (the lease taken over) is counted lost, warned of, and ends renewing; the completion then says what happened', async () => {
    let answers = 0;
    const { store, extensions } = fakeStore(async () => ++answers < 3);
    store.complete = async () => false;
    const { lease, counted } = open(store, 600_000);
    await jest.advanceTimersByTimeAsync(5_000);
    expect(extensions).toHaveLength(3);
    expect(counted).toEqual(['renewed', 'renewed', 'lost']);
    expect(warnings).toEqual([expect.stringMatching(/^The lease of 'order-7' for Payments.charge could not be renewed 0.3 s after its claim: it expired and another delivery took it over/)]);
    const refused = lease.commit(RESPONSE);
    await expect(refused).rejects.toThrow(IdempotencyLeaseLostError);
    await expect(refused).rejects.toThrow(/expired and another delivery took it over, .*\(the handler ran 5 s under a lease of 0.3 s, renewed up to 600 s after the claim\)/);
  });

  it('a store that fails is counted and warned of, and the next renewal tries again', async () => {
    let answers = 0;
    const { store, extensions } = fakeStore(async () => {
      if (++answers === 1) throw new Error('connection reset');
      return true;
    });
    const { counted } = open(store, 400);
    await jest.advanceTimersByTimeAsync(5_000);
    expect(extensions.map(({ leaseMs }) => leaseMs)).toEqual([300, 200]);
    expect(counted).toEqual(['failed', 'renewed']);
    expect(warnings).toEqual([expect.stringContaining('the store failed (connection reset)')]);
  });

  it("never shortens what the handler's own extendLease() set", async () => {
    const { store, extensions } = fakeStore();
    const { lease } = open(store, 2_000);
    await lease.run(async () => {
      const active = storage.getStore();
      await active?.lease?.extend(10_000);
    });
    await jest.advanceTimersByTimeAsync(5_000);
    expect(extensions.map(({ leaseMs }) => leaseMs)).toEqual([10_000]);
  });
});
