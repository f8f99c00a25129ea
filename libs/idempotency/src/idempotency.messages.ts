import { MAX_KEY_LENGTH } from './idempotency.constants.js';

/** Every message text the library produces, in one place. */
export const messages = {
  keyMissing: (source: string) => `The message has no idempotency key: ${source} is missing.`,
  keyNotString: (source: string) => `The idempotency key (${source}) must be a string or a number.`,
  keyEmpty: (source: string) => `The idempotency key (${source}) is empty.`,
  keyTooLong: (source: string, length: number) =>
    `The idempotency key (${source}) is ${length} characters long; at most ${MAX_KEY_LENGTH} are accepted.`,
  keyHasControlCharacters: (source: string) =>
    `The idempotency key (${source}) contains control characters.`,
  keyReused: (key: string) =>
    `The idempotency key '${key}' was already used for a different payload; use a new key for a new operation.`,
  inFlight: (key: string) =>
    `A message with the idempotency key '${key}' is still being processed; retry after it completes.`,
  transient: (key: string, code: string) =>
    `The database aborted the transaction of '${key}' (PostgreSQL ${code}); nothing was committed, retry.`,
  claimVanished: (key: string) =>
    `The claim of '${key}' disappeared while it was being read (purged concurrently); retry.`,
  noActiveClaim: () =>
    'IdempotencyContext was used outside an @IdempotentHandler(): there is no idempotent transaction here.',
  invalidDuration: (name: string, value: unknown) =>
    `${name} must be a duration such as '500ms', '30s', '15m', '72h' or '7d'; got ${JSON.stringify(value)}.`,
  invalidTableName: (value: unknown) =>
    `tableName must be a plain PostgreSQL identifier (letters, digits, underscores); got ${JSON.stringify(value)}.`,
  invalidDataSource: (value: unknown) => `dataSource must be a data source name; got ${JSON.stringify(value)}.`,
  invalidAttemptLimit: (name: string, value: unknown) =>
    `${name} must be a whole number of at least 1; got ${JSON.stringify(value)}.`,
  unsupportedTransport: (transport: string) =>
    `Messages of ${transport} carry no default idempotency key: set \`key\` to a payload path or a function.`,
  requeued: (pattern: string, attempt: number, maxAttempts: number, reason: string) =>
    `Message on '${pattern}' failed (attempt ${attempt} of ${maxAttempts}) and was requeued: ${reason}`,
  deadLettered: (pattern: string, reason: string) =>
    `Message on '${pattern}' was rejected to the dead-letter path: ${reason}`,
  settleFailed: (pattern: string, reason: string) =>
    `Could not settle a message on '${pattern}' with the broker (${reason}); it will be redelivered and answered as a duplicate.`,
  attemptsExhausted: (attempts: number, reason: string) => `it failed ${attempts} times; last error: ${reason}`,
  duplicate: (consumer: string, key: string, sender: string) =>
    `Duplicate of '${key}' from ${sender} acknowledged for ${consumer} without running it again.`,
  invalidSenders: (value: unknown) =>
    `senders must map sender names to { redeliveryHorizon }, e.g. { payments: { redeliveryHorizon: '3d' } }; got ${JSON.stringify(value)}.`,
  invalidBatchSize: (value: unknown, max: number) =>
    `purge.batchSize must be a whole number from 1 to ${max} (each batch is one short transaction); got ${JSON.stringify(value)}.`,
  invalidDuplicateRate: (value: unknown) =>
    `health.maxDuplicateRate must be a share from 0 to 1, e.g. 0.05 for 5%; got ${JSON.stringify(value)}.`,
  invalidCount: (name: string, value: unknown) => `${name} must be a whole number above 0; got ${JSON.stringify(value)}.`,
  thresholdWithinPurgeInterval: (name: string, threshold: string, interval: string) =>
    `health.${name} (${threshold}) must be longer than purge.interval (${interval}), ` +
    `or the indicator turns down between two purges; raise health.${name} or shorten purge.interval.`,
  retentionTooShort: (handler: string, retention: string, sender: string, horizon: string) =>
    `${handler} keeps message ids for ${retention}, less than the redelivery horizon of its sender '${sender}' (${horizon}): ` +
    `a redelivery after ${retention} would be processed again. Set retention: '${horizon}' or longer on the handler.`,
  retentionTooShortForAnySender: (handler: string, retention: string, sender: string, horizon: string) =>
    `${handler} keeps message ids for ${retention} and chooses its sender per message, so it must outlast the longest ` +
    `redelivery horizon declared, that of '${sender}' (${horizon}). Set retention: '${horizon}' or longer on the handler.`,
  consumerConflict: (consumer: string, handlers: readonly string[]) =>
    `${handlers.join(' and ')} claim the same consumer name '${consumer}', so each would skip the other's messages as ` +
    `duplicates. Give each its own name with @IdempotentHandler({ consumer }).`,
  purged: (table: string, rows: number, batches: number, durationMs: number) =>
    `Purged ${rows} expired message ids from ${table} in ${batches} batches, ${durationMs} ms.`,
  purgeFailed: (table: string, rows: number) =>
    `The purge of expired message ids from ${table} failed after deleting ${rows}; the next run carries on.`,
  scheduleModuleMissing: () =>
    'The idempotency purge runs through @nestjs/schedule: import ScheduleModule.forRoot() in your application module, ' +
    'or set purge: { interval: false } to run no purge timer on this instance.',
  storeTooLarge: (estimatedRows: number, max: number) =>
    `The store holds about ${estimatedRows} message ids, more than health.maxEstimatedRows (${max}).`,
  purgeLagging: (lag: string, max: string) =>
    `The oldest expired message id expired ${lag} ago and is not purged yet, longer than health.maxPurgeLag (${max}).`,
  purgeOverdue: (since: string, max: string) =>
    `This instance's last successful purge (or its start) was ${since} ago, longer than health.maxTimeSincePurge (${max}).`,
  duplicateRateHigh: (sender: string, duplicates: number, deliveries: number, window: string, rate: string, max: string) =>
    `${duplicates} of ${deliveries} deliveries from '${sender}' in the last ${window} were duplicates (${rate}), ` +
    `more than health.maxDuplicateRate (${max}).`,
  storeUnreadable: (table: string, reason: string) => `The store ${table} could not be read: ${reason}`,
};
