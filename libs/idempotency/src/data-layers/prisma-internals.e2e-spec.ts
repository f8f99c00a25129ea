import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '@prisma/client';
import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import { separatePrismaBatchesPerClaim } from './prisma-internals.js';

/** The parts of Prisma's client that prisma-internals.ts relies on, on the installed version. */
describe("Prisma's client internals", () => {
  it("a PrismaClient has the DataLoader options through which its batches are kept per claim; other values are left alone", async () => {
    const pool = new pg.Pool({ max: 1 });
    try {
      const storage = new AsyncLocalStorage<{ consumer: string }>();
      expect(separatePrismaBatchesPerClaim(new PrismaClient({ adapter: new PrismaPg(pool) }), storage)).toBe(true);
      expect(separatePrismaBatchesPerClaim(pool, storage)).toBe(false);
      expect(
        separatePrismaBatchesPerClaim(
          new Proxy(
            {},
            {
              get() {
                throw new Error('a provider that throws when read');
              },
            },
          ),
          storage,
        ),
      ).toBe(false);
    } finally {
      await pool.end();
    }
  });
});
