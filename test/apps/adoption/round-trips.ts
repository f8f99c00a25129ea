import { AsyncLocalStorage } from 'node:async_hooks';
import type { INestApplication } from '@nestjs/common';
import pg from 'pg';

const answering = new AsyncLocalStorage<true>();
let count = 0;

/**
 * Counts every query node-postgres sends while this process answers an HTTP request: one round
 * trip each (simple or extended protocol). What the process sends on its own (the store's
 * sampler, a relay, the boot checks) is not counted, so a sample that a loaded machine delays
 * until a measured request cannot be taken for the request's.
 */
export function countRoundTrips(app: INestApplication): void {
  app.use((_request: unknown, _response: unknown, next: () => void) => answering.run(true, next));
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
    if (answering.getStore()) count++;
    return query.apply(this, args);
  } as typeof pg.Client.prototype.query;
}

/** Round trips sent so far while answering requests. */
export function roundTrips(): number {
  return count;
}
