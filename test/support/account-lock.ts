import type pg from 'pg';
import type { TestDatabase } from './test-database.js';

/** Holds the account's row lock so a credit to it blocks mid-handler, its claim uncommitted; end the client's transaction to let it go. */
export async function lockAccount(db: TestDatabase, account: string): Promise<pg.Client> {
  const holder = await db.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT 1 FROM accounts WHERE account = $1 FOR UPDATE', [account]);
  return holder;
}

/** Whether exactly one backend of the suite's database waits on a lock: the handler blocked inside its claim. */
export async function handlerBlocked(db: TestDatabase): Promise<boolean> {
  const [{ n }] = await db.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
  return Number(n) === 1;
}
