import pg from 'pg';

/** A database of its own for one suite, on the server the e2e run uses. */
export interface TestDatabase {
  readonly url: string;
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** A client of its own, for holding locks and transactions across requests. */
  connect(): Promise<pg.Client>;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    throw new Error('DATABASE_URL is not set: run the suites through jest, whose global setup provides it');
  }
  const name = `idem_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client(serverUrl);
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 4 });
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

/** Polls `probe` until it answers true; fails after `timeoutMs`. For waiting on a state, not a time. */
export async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting until ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
