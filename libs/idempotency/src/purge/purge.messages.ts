/** The message texts of the purge. */
export const purgeMessages = {
  invalidBatchSize: (value: unknown, max: number) =>
    `purge.batchSize must be a whole number from 1 to ${max} (each batch is one short transaction); got ${JSON.stringify(value)}.`,
  purged: (table: string, rows: number, batches: number, durationMs: number) =>
    `Purged ${rows} expired message ids from ${table} in ${batches} batches, ${durationMs} ms.`,
  purgedOutbox: (table: string, rows: number) => `Purged ${rows} dispatched messages from ${table}.`,
  purgeFailed: (table: string, rows: number) =>
    `The purge of expired message ids from ${table} failed after deleting ${rows}; the next run carries on.`,
};
