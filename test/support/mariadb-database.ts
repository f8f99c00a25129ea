import mysql, { type Pool, type PoolConnection, type RowDataPacket } from 'mysql2/promise';
import { randomBytes } from 'node:crypto';

/** The MariaDB of this machine (CI's too), where each suite makes a database of its own. */
export const MARIADB_SERVER = process.env.MARIADB_URL ?? 'mysql://root@127.0.0.1:3306';

/** A database of its own on MariaDB for one suite, queried through a pool, and dropped after it. */
export interface MariaDbDatabase {
  readonly name: string;
  readonly url: string;
  readonly pool: Pool;
  drop(): Promise<void>;
}

/** A new database named `<prefix>_<random>` on MariaDB, with `statements` run in it first (its tables). */
export async function createMariaDbDatabase(prefix: string, statements: readonly string[] = []): Promise<MariaDbDatabase> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = await mysql.createConnection(MARIADB_SERVER);
  await admin.query(`CREATE DATABASE \`${name}\``);
  const url = `${MARIADB_SERVER}/${name}`;
  const pool = mysql.createPool({ uri: url, connectionLimit: 4 });
  for (const statement of statements) {
    await pool.query(statement);
  }
  return {
    name,
    url,
    pool,
    drop: async () => {
      await pool.end();
      await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await admin.end();
    },
  };
}

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
