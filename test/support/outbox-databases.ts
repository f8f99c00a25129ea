import type { PoolConnection } from 'mysql2/promise';
import { createMariaDbDatabase } from './mariadb-database.js';
import { createTestDatabase } from './test-database.js';

/** The databases the outbox suite runs on: the producer's and the consumer's store, outbox and tables. */
export type OutboxDatabase = 'postgres' | 'mariadb';

/**
 * One outbox test's database, with what the suite reads of it that each database tells its own
 * way: the relay's batch held open, the rows it locks, relays waiting for a table the test holds,
 * handlers asleep in their transactions. Counts come back as numbers.
 */
export interface OutboxTestDatabase {
  readonly url: string;
  /** Rows of `sql` (plain SQL both databases run), each count a number. */
  query(sql: string): Promise<Record<string, number>[]>;
  /** Rows of `sql` as the driver answers them. */
  rows<T>(sql: string): Promise<T[]>;
  /** Transactions idle with the outbox's rows locked: a relay's batch waiting for its broker. */
  idleBatches(): Promise<number>;
  /** The ids of the messages not dispatched that a transaction holds locked. */
  lockedPending(): Promise<string[]>;
  /** Holds the outbox table, so that a relay's batch waits for it, until the function it answers is called. */
  holdOutbox(): Promise<() => Promise<void>>;
  /** Relays whose batch waits for the table `holdOutbox()` holds. */
  relaysWaiting(): Promise<number>;
  /** Handlers asleep in their claim's transaction (HANDLER_DELAY_MS). */
  sleepingHandlers(): Promise<number>;
  drop(): Promise<void>;
}

const numbers = (rows: Record<string, unknown>[]) => rows.map((row) => Object.fromEntries(Object.entries(row).map(([name, value]) => [name, Number(value)])));

/** A new database of `database` with `credits` and `granted_credits`. */
export async function createOutboxTestDatabase(database: OutboxDatabase): Promise<OutboxTestDatabase> {
  return database === 'mariadb' ? mariaDb() : postgres();
}

async function postgres(): Promise<OutboxTestDatabase> {
  const db = await createTestDatabase();
  await db.query(`
    CREATE TABLE credits (id bigserial PRIMARY KEY, account text NOT NULL, cents int NOT NULL, created_at timestamptz NOT NULL DEFAULT clock_timestamp());
    CREATE TABLE granted_credits (id bigserial PRIMARY KEY, message_id text NOT NULL, credit_id bigint NOT NULL, account text NOT NULL, cents int NOT NULL,
                                  granted_at timestamptz NOT NULL DEFAULT clock_timestamp());`);
  const count = async (sql: string) => (await db.query(sql)).length;
  return {
    url: db.url,
    query: async (sql) => numbers(await db.query(sql)),
    rows: (sql) => db.query(sql),
    idleBatches: () =>
      count(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction' AND query LIKE '%SELECT seq, id, destination%FOR UPDATE SKIP LOCKED%'`),
    lockedPending: async () =>
      (
        await db.query<{ id: string }>(`
          WITH pending AS (SELECT id FROM outbox_messages WHERE dispatched_at IS NULL),
               free AS (SELECT id FROM outbox_messages WHERE dispatched_at IS NULL FOR UPDATE SKIP LOCKED)
          SELECT id FROM pending EXCEPT SELECT id FROM free`)
      ).map((row) => row.id),
    holdOutbox: async () => {
      const gate = await db.connect();
      await gate.query('BEGIN');
      await gate.query('LOCK TABLE outbox_messages IN EXCLUSIVE MODE');
      return async () => {
        await gate.query('COMMIT');
        await gate.end();
      };
    },
    relaysWaiting: () => count(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%SELECT seq, id, destination%'`),
    sleepingHandlers: () => count(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query LIKE 'SELECT pg_sleep%'`),
    drop: () => db.drop(),
  };
}

async function mariaDb(): Promise<OutboxTestDatabase> {
  const db = await createMariaDbDatabase('idem_outbox', [
    'CREATE TABLE credits (id BIGINT AUTO_INCREMENT PRIMARY KEY, account VARCHAR(255) NOT NULL, cents INT NOT NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))',
    'CREATE TABLE granted_credits (id BIGINT AUTO_INCREMENT PRIMARY KEY, message_id VARCHAR(255) NOT NULL, credit_id BIGINT NOT NULL, account VARCHAR(255) NOT NULL, ' +
      'cents INT NOT NULL, granted_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))',
  ]);
  const rows = async <T>(sql: string) => (await db.pool.query(sql))[0] as T[];
  const count = async (sql: string) => (await rows(sql)).length;
  const sessions = `FROM information_schema.PROCESSLIST WHERE DB = '${db.name}'`;
  return {
    url: db.url,
    query: async (sql) => numbers(await rows(sql)),
    rows,
    // A relay's session between statements (Sleep) whose transaction holds row locks.
    idleBatches: () =>
      count(`SELECT 1 FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
             WHERE p.DB = '${db.name}' AND p.COMMAND = 'Sleep' AND t.trx_rows_locked > 0`),
    lockedPending: async () => {
      const connection: PoolConnection = await db.pool.getConnection();
      try {
        const [pending] = await connection.query('SELECT id FROM outbox_messages WHERE dispatched_at IS NULL');
        await connection.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
        await connection.query('START TRANSACTION');
        const [free] = await connection.query('SELECT id FROM outbox_messages WHERE dispatched_at IS NULL FOR UPDATE SKIP LOCKED');
        await connection.query('ROLLBACK');
        const freeIds = new Set((free as { id: string }[]).map((row) => row.id));
        return (pending as { id: string }[]).map((row) => row.id).filter((id) => !freeIds.has(id));
      } finally {
        connection.release();
      }
    },
    holdOutbox: async () => {
      const gate = await db.pool.getConnection();
      await gate.query('LOCK TABLES outbox_messages WRITE');
      return async () => {
        await gate.query('UNLOCK TABLES');
        gate.release();
      };
    },
    relaysWaiting: () => count(`SELECT 1 ${sessions} AND STATE LIKE 'Waiting for table%' AND INFO LIKE '%SELECT CAST(seq AS CHAR) AS seq, id, destination%'`),
    sleepingHandlers: () => count(`SELECT 1 ${sessions} AND COMMAND = 'Query' AND INFO LIKE 'SELECT SLEEP%'`),
    drop: () => db.drop(),
  };
}
