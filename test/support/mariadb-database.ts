import mysql, { type Pool } from 'mysql2/promise';
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
