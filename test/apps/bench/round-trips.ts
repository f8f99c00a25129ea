import mysql2 from 'mysql2';
import pg from 'pg';

let count = 0;

/**
 * Counts every query this process sends through node-postgres: one round trip each (simple or
 * extended protocol), whichever layer sends it (plain `pg`, Drizzle, Kysely, Prisma's
 * `@prisma/adapter-pg`, MikroORM's knex and TypeORM all query through this `pg`'s `pg.Client`), and
 * every query a mysql2 connection sends (the layers on MariaDB), as `test/apps/adoption/round-trips.ts` counts them for the suites.
 */
export function countRoundTrips(): void {
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
    count++;
    return query.apply(this, args);
  } as typeof pg.Client.prototype.query;
  // On MariaDB: every query and prepared statement a mysql2 connection sends (a pool's and TypeORM's go through one).
  const connection = mysql2.Connection.prototype as unknown as Record<'query' | 'execute', (...args: unknown[]) => unknown>;
  for (const method of ['query', 'execute'] as const) {
    const send = connection[method];
    connection[method] = function countedSend(this: unknown, ...args: unknown[]) {
      count++;
      return send.apply(this, args);
    };
  }
}

/** Round trips sent so far. */
export function roundTrips(): number {
  return count;
}
