import pg from 'pg';

/** A database of its own for one suite, on the server the e2e run uses. */
export interface TestDatabase {
  readonly url: string;
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** A client of its own, for holding locks and transactions across requests. */
  connect(): Promise<pg.Client>;
  drop(): Promise<void>;
}

/** A new database on the server at `serverUrl` (by default the suites' `DATABASE_URL`), queried through a pool of `poolSize`. */
export async function createTestDatabase(serverUrl = process.env.DATABASE_URL, poolSize = 4): Promise<TestDatabase> {
  if (!serverUrl) {
    throw new Error('DATABASE_URL is not set: run the suites through jest, whose global setup provides it');
  }
  const name = `idem_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client(serverUrl);
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: poolSize });
  // pool.end() resolves before its idle backends have exited; DROP ... WITH (FORCE) then terminates
  // them, and the pool reports that as an error event that would otherwise fail the suite.
  pool.on('error', () => undefined);
  return {
    url: url.toString(),
    query: async <T>(sql: string, params?: unknown[]) => (await pool.query(sql, params)).rows as T[],
    connect: async () => {
      const client = new pg.Client(url.toString());
      await client.connect();
      return client;
    },
    drop: async () => {
      await pool.end();
      await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

/**
 * Polls `probe` until it answers true; fails after `timeoutMs`. For waiting on a state, not a time.
 * The pause between probes doubles from 10 ms to at most 100 ms: a state reached at once is seen
 * at once, and a long wait (a broker's group, a backlog) does not probe 50 times a second, each
 * probe a query or a request that takes CPU from the suites beside it.
 */
export async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 10; !(await probe()); pause = Math.min(pause * 2, 100)) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting until ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/**
 * Locks the `gates` row `gate` of `db` (`SELECT ... FOR UPDATE`) in a transaction of a client of its
 * own; resolves to the release of that lock (ROLLBACK): `DataLayerHarness.block` of the data-layer suites.
 */
export async function lockGate(db: TestDatabase, gate: string): Promise<() => Promise<void>> {
  const holder = await db.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT name FROM gates WHERE name = $1 FOR UPDATE', [gate]);
  return async () => {
    await holder.query('ROLLBACK');
    await holder.end();
  };
}
