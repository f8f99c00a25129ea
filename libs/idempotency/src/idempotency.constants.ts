/** The request header that carries the idempotency key by default. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** The response header set to `true` on every replayed response. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

/** The processed-messages table's name unless `tableName` says otherwise. */
export const DEFAULT_TABLE_NAME = 'processed_messages';

/** The longest accepted idempotency key, in characters (Unicode code points, as PostgreSQL's `varchar(255)` counts them). */
export const MAX_KEY_LENGTH = 255;
