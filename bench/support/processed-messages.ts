import type { BenchDatabase } from './bench-database.js';

/** Rows to write into processed_messages at once, as a long-running service would have left them. */
export interface SeededMessages {
  count: number;
  /** The consumer the rows belong to; each message id is `seed-<n>`. */
  consumer: string;
  /**
   * Expired rows expired between a day and a day minus `count` ms ago; the others expire from an
   * hour from now on. Either way, expiry times rise with the insertion order, one millisecond apart.
   */
  expired: boolean;
}

/** Empties processed_messages, so that a case's store holds only what the case puts there. */
export async function emptyProcessedMessages(database: BenchDatabase): Promise<void> {
  await database.query('TRUNCATE processed_messages');
}

/**
 * Writes `count` rows into processed_messages with one `INSERT ... SELECT generate_series`, each
 * with a recorded response like the bench handler's.
 */
export async function seedProcessedMessages(database: BenchDatabase, { count, consumer, expired }: SeededMessages): Promise<void> {
  const firstExpiry = expired ? `now() - interval '1 day'` : `now() + interval '1 hour'`;
  await database.query(
    `INSERT INTO processed_messages (consumer, message_id, sender, fingerprint, response_status, response_body, processed_at, expires_at)
     SELECT $1, 'seed-' || i, 'default', repeat('0', 64), 201, '{"account":"a1","cents":1,"balance":1}', now() - interval '7 days',
            ${firstExpiry} + i * interval '1 millisecond'
     FROM generate_series(1, $2::int) AS i`,
    [consumer, count],
  );
}

/** Rows of processed_messages whose expiry has passed, and rows of `consumer`. */
export async function countProcessedMessages(database: BenchDatabase, consumer: string): Promise<{ expired: number; ofConsumer: number }> {
  const [counts] = await database.query<{ expired: string; of_consumer: string }>(
    `SELECT count(*) FILTER (WHERE expires_at < now()) AS expired, count(*) FILTER (WHERE consumer = $1) AS of_consumer
     FROM processed_messages`,
    [consumer],
  );
  return { expired: Number(counts.expired), ofConsumer: Number(counts.of_consumer) };
}
