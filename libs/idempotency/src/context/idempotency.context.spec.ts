import { AsyncLocalStorage } from 'node:async_hooks';
import type { ClaimConnection } from '../data-layers/data-layer.js';
import { IdempotencyContextError } from '../errors/idempotency.errors.js';
import { type ActiveClaim, IdempotencyContext } from './idempotency.context.js';

describe('IdempotencyContext', () => {
  const storage = new AsyncLocalStorage<ActiveClaim>();
  const context = new IdempotencyContext(storage);
  const claim = { consumer: 'Orders.place', key: 'order-7', sender: 'shop', downstreamKey: 'd'.repeat(64) };

  it('throws outside an idempotent handler, and says so', () => {
    expect(context.isActive).toBe(false);
    expect(() => context.key).toThrow(IdempotencyContextError);
    expect(() => context.downstreamKey).toThrow(/outside an @IdempotentHandler\(\)/);
  });

  it('has no claim transaction in lease mode, and no lease in the transactional mode', async () => {
    const extended: number[] = [];
    await storage.run({ ...claim, lease: { leaseMs: 30_000, extend: async (ms) => void extended.push(ms) } }, async () => {
      expect(() => context.manager).toThrow(/Orders.place runs in lease mode, which holds no claim transaction/);
      await context.extendLease();
      await context.extendLease('2m');
      expect(context.downstreamKey).toBe('d'.repeat(64));
    });
    expect(extended).toEqual([30_000, 120_000]);
    await storage.run(claim, async () => {
      await expect(context.extendLease()).rejects.toThrow(/runs in the transactional mode, which holds no lease/);
    });
  });

  it("has no object of the layer for run() in a transaction of the caller's own: it says to write through that transaction", async () => {
    const callers = { isOpen: true, handle: undefined } as unknown as ClaimConnection;
    await storage.run({ ...claim, transaction: callers }, async () => {
      expect(() => context.manager).toThrow(IdempotencyContextError);
      expect(() => context.client).toThrow(/Orders.place claims in a transaction of your own \(run\(\) given transaction\)/);
    });
  });
});
