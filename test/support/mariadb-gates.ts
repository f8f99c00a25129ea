import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import type { MariaDbDatabase } from './mariadb-database.js';

// The gates of the MariaDB suites: rows of their table `gates` that a test locks, so that a handler waits at one.

/** Locks the `gates` rows named (made first where missing) in a transaction of the test's own, on `db`; resolves to its ROLLBACK. */
export async function holdGates(db: MariaDbDatabase, ...gates: string[]): Promise<() => Promise<void>> {
  const holder: PoolConnection = await db.pool.getConnection();
  for (const gate of gates) {
    await holder.query('INSERT IGNORE INTO gates (name) VALUES (?)', [gate]);
  }
  await holder.query('START TRANSACTION');
  for (const gate of gates) {
    await holder.query('SELECT name FROM gates WHERE name = ? FOR UPDATE', [gate]);
  }
  let released = false;
  return async () => {
    if (!released) {
      released = true;
      await holder.query('ROLLBACK');
      holder.release();
    }
  };
}

/** Handlers' statements at a gate of `db` still running: each waits for the gate's row lock. */
export async function gateWaits(db: MariaDbDatabase): Promise<number> {
  const [[row]] = await db.pool.query<RowDataPacket[]>(
    `SELECT count(*) AS n FROM information_schema.PROCESSLIST WHERE DB = ? AND INFO LIKE 'SELECT name FROM gates%'`,
    [db.name],
  );
  return Number((row as { n: number | string }).n);
}
