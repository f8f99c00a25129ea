import pg from 'pg';

let count = 0;

/**
 * Counts every query this process sends through node-postgres: one round trip each (simple or
 * extended protocol), whichever layer sends it (plain `pg`, Drizzle, Kysely, Prisma's
 * `@prisma/adapter-pg`, MikroORM's knex and TypeORM all query through this `pg`'s `pg.Client`), as `test/apps/adoption/round-trips.ts` counts them for the suites.
 */
export function countRoundTrips(): void {
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
    count++;
    return query.apply(this, args);
  } as typeof pg.Client.prototype.query;
}

/** Round trips sent so far. */
export function roundTrips(): number {
  return count;
}
