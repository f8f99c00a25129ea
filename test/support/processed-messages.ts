import type { IdempotencyPurgeService } from 'nestjs-idempotent-consumer';
import { type TestDatabase, until } from './test-database.js';

/** Rows to write into processed_messages at once, as a long-running service would have left them. */
export interface SeededMessages {
  count: number;
  /** The consumer the rows belong to; each message id is `seed-<n>`, `n` padded to 8 digits. */
  consumer: string;
  /**
   * Expired rows expired between a day and a day minus `count` ms ago; the others expire from an
   * hour from now on. Either way, expiry times rise with the insertion order, one millisecond apart.
   */
  expired: boolean;
  sender?: string;
}

/**
 * Writes `count` rows into processed_messages with one INSERT ... SELECT generate_series, each
 * with a recorded response like the demo's credit handler's (the bench's too).
 */
export async function seedProcessedMessages(db: Pick<TestDatabase, 'query'>, { count, consumer, expired, sender = 'payments' }: SeededMessages): Promise<void> {
  const firstExpiry = expired ? `now() - interval '1 day'` : `now() + interval '1 hour'`;
  await db.query(
    `INSERT INTO processed_messages (consumer, message_id, sender, fingerprint, response_status, response_body, processed_at, expires_at)
     SELECT $1, 'seed-' || lpad(i::text, 8, '0'), $2, repeat('0', 64), 201, '{"account":"a1","cents":1,"balance":1}', now() - interval '7 days',
            ${firstExpiry} + i * interval '1 millisecond'
     FROM generate_series(1, $3::int) AS i`,
    [consumer, sender, count],
  );
}

/** Rows of `consumer` in processed_messages; `expired` counts only those past their expiry (or only those not). */
export async function countProcessedMessages(db: Pick<TestDatabase, 'query'>, consumer: string, expired?: boolean): Promise<number> {
  const condition = expired === undefined ? '' : expired ? 'AND expires_at < now()' : 'AND expires_at >= now()';
  const [{ n }] = await db.query<{ n: string }>(`SELECT count(*) AS n FROM processed_messages WHERE consumer = $1 ${condition}`, [
    consumer,
  ]);
  return Number(n);
}

/**
 * The statement of a purge batch as the module sends it, read on PostgreSQL while the batch waits
 * for processed_messages, which this locks meanwhile; then the run goes on (and purges what has
 * expired) and is awaited.
 */
export async function purgeBatchStatement(db: TestDatabase, purge: IdempotencyPurgeService): Promise<string> {
  const holder = await db.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE processed_messages IN ACCESS EXCLUSIVE MODE');
    const running = purge.purgeNow();
    let statement: string | undefined;
    await until(async () => {
      const waiting = await db.query<{ query: string }>(
        `SELECT query FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%idempotency.purge%' AND pid <> pg_backend_pid()`,
      );
      statement = waiting[0]?.query;
      return statement !== undefined;
    }, 'a purge batch waits for processed_messages');
    await holder.query('COMMIT');
    await running;
    return statement as string;
  } finally {
    await holder.end();
  }
}
