import { hash } from 'node:crypto';
import { DEFAULT_TABLE_NAME } from '../idempotency.constants.js';

/**
 * Separates the scope's digest from the client's key in a stored message id (`scopedMessageId`).
 * A control character: no key or scope a client can send holds one (they are refused), so a
 * scoped id never equals an unscoped key, nor another scope's id.
 * @internal
 */
export const SCOPED_KEY_SEPARATOR = '\u001f';

/**
 * Separates the scope's digest from the digest of a key too long to be stored beside it.
 * @internal
 */
export const SCOPED_DIGEST_SEPARATOR = '\u001e';

/** The first 43 characters of an anonymous caller's id: the SHA-256 of the empty scope, in base64url. */
const ANONYMOUS_PREFIX = hash('sha256', '', 'base64url');

/**
 * A stored message id as a reader of a log or an error wants it: the client's key, quoted, and
 * that it is scoped to a caller (whose identity is not shown), or to the anonymous callers.
 * @internal
 */
export function shownKey(id: string): string {
  const plain = id.indexOf(SCOPED_KEY_SEPARATOR);
  if (plain >= 0) {
    return `'${id.slice(plain + 1)}' ${scopeShown(id)}`;
  }
  const hashed = id.indexOf(SCOPED_DIGEST_SEPARATOR);
  if (hashed >= 0) {
    return `with SHA-256 '${id.slice(hashed + 1)}' ${scopeShown(id)}`;
  }
  return `'${id}'`;
}

function scopeShown(id: string): string {
  return id.startsWith(ANONYMOUS_PREFIX) ? '(of an anonymous caller)' : '(scoped to its caller)';
}

/**
 * Milliseconds as seconds, for a reader: `4.2 s`, `0.35 s`.
 * @internal
 */
export function shownSeconds(milliseconds: number): string {
  return `${Number((milliseconds / 1000).toPrecision(2))} s`;
}

/** The message texts that the errors build themselves, from what they carry. */
export const errorMessages = {
  noActiveClaim: () => 'IdempotencyContext was used outside an @IdempotentHandler(): there is no idempotent transaction here.',
  inFlight: (key: string) => `A message with the idempotency key ${shownKey(key)} is still being processed; retry after it completes.`,
  keyReused: (key: string) =>
    `The idempotency key ${shownKey(key)} was already used for a different payload; use a new key for a new operation.`,
  transactionAborted: (consumer: string, key: string) =>
    `PostgreSQL aborted the transaction of ${shownKey(key)} for ${consumer}: a statement in the handler failed and the handler ` +
    'carried on, so nothing could be committed, the claim included. Run statements that may fail in a savepoint, a ' +
    "transaction of your data layer nested in the handler's (TypeORM manager.transaction(), Drizzle or Kysely db.transaction(), " +
    'Prisma $transaction(), MikroORM em.transactional()), to carry on after their failure.',
  commitRefused: (consumer: string, key: string, reason: string) =>
    `PostgreSQL refused the COMMIT of ${shownKey(key)} for ${consumer} (${reason}): nothing was committed, the claim included, ` +
    'and a retry meets the same refusal. An outbox message whose id another message took: give each message an id of its own ' +
    '(`${idempotency.downstreamKey}:<event name>`), not an id another request or handler publishes.',
  leaseLost: (consumer: string, key: string, held?: { heldMs: number; leaseMs: number; renewLeaseForMs: number }) =>
    `The lease of ${shownKey(key)} for ${consumer} expired and another delivery took it over, so this delivery's result was not ` +
    'recorded' +
    (held
      ? ` (the handler ran ${shownSeconds(held.heldMs)} under a lease of ${shownSeconds(held.leaseMs)}, ` +
        (held.renewLeaseForMs > 0 ? `renewed up to ${shownSeconds(held.renewLeaseForMs)} after the claim)` : 'never renewed)')
      : '') +
    "; the delivery that holds the lease answers the message's duplicates. Retry, or raise the handler's renewLeaseFor " +
    '(or its lease) above the time it takes.',
  responseTooLarge: (consumer: string, key: string, maxBodyBytes: number, status: number, bytes: number) =>
    `${shownKey(key)} was processed by ${consumer} and answered ${status} with a body of ${bytes} bytes, larger than ` +
    `replay.maxBodyBytes (${maxBodyBytes} bytes), so that answer was not recorded and cannot be replayed; the operation is done ` +
    'and is not run again. Read its result another way; to replay such answers, raise replay.maxBodyBytes.',
  recordUnreadable: (consumer: string, key: string, reason: string, keyId: string | null, version: number, configured: readonly string[]) =>
    `The recorded response of ${consumer} to '${key}' cannot be read, so it is not replayed (and the handler is not run again): ` +
    unreadableCause(reason, keyId, version, configured),
  unreadableCause,
  consumerConflict: (consumer: string, handlers: readonly string[], formerNames: readonly (string | undefined)[]) =>
    `${handlers.join(' and ')} claim the same consumer name '${consumer}', so each would skip the other's messages as ` +
    `duplicates. Give each its own name with @IdempotentHandler({ consumer })` +
    (formerNames.some(Boolean)
      ? `; to keep recognising the ids they processed before 0.3.0, use their former names (${formerNames.filter(Boolean).map((name) => `'${name}'`).join(', ')}).`
      : '.'),
  schemaMissing: (table: string, missing: readonly string[], migrations: readonly string[]) =>
    `The processed-messages store (table ${table}) lacks what this version of nestjs-idempotent-consumer needs: ` +
    `${missing.join('; ')}. Add ${listed(migrations)} to the data source's migrations and run them. ` +
    (migrations.includes(CREATE_FUNCTIONS) && !migrations.includes(CREATE_TABLE)
      ? `If they are recorded as run already (a function was dropped after), TypeORM will not run them again: ${recreateFunctions(table)} `
      : '') +
    "The data source needs all of the library's migrations, in this order: CreateProcessedMessagesTable1764633600000, " +
    'CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000 (each subclassed with the ' +
    "table's name if it is not the default); the last brings a table created by an earlier version to the current shape.",
  schemaMissingSql: (table: string, missing: readonly string[], migrations: readonly string[]) =>
    `The processed-messages store (table ${table}) lacks what this version of nestjs-idempotent-consumer needs: ` +
    `${missing.join('; ')}. Run the package's SQL of ${listed(migrations.map(sqlFileOf))}, in this order, with your ` +
    `migration tool: the files are in node_modules/nestjs-idempotent-consumer/sql/, and ` +
    `npx nestjs-idempotent-consumer-sql${table === DEFAULT_TABLE_NAME ? '' : ` --table ${table}`} prints them all ` +
    "(--from <timestamp> for only those after the last one run). The guide's \"Schema without TypeORM\" (docs/data-layers.md) shows how in " +
    'Prisma, Drizzle and Kysely migrations.',
  schemaMissingMariaDb: (table: string, missing: readonly string[], sqlFiles: boolean) =>
    `The processed-messages store (table ${table}) lacks what this version of nestjs-idempotent-consumer needs: ${missing.join('; ')}. ` +
    (!sqlFiles
      ? "Add CreateProcessedMessagesTableMariaDb1796601600000 (subclassed with the table's name if it is not the default) to the data source's migrations and run them."
      : table === DEFAULT_TABLE_NAME
      ? "Run the package's sql/mariadb/1796601600000-create-processed-messages-table.sql with your migration tool."
      : `Run the SQL that mariaDbSchemaSql('${table}') answers with your migration tool.`),
  outboxSchemaMissing: (table: string, missing: readonly string[], sqlFiles: boolean) =>
    `The outbox (table ${table}) lacks what this version of nestjs-idempotent-consumer needs: ${missing.join('; ')}. ` +
    (sqlFiles
      ? 'Run the package\'s sql/1796428800000-create-outbox-messages-table.sql with your migration tool ' +
        `(npx nestjs-idempotent-consumer-sql${table === 'outbox_messages' ? '' : ` --outbox-table ${table}`} prints it with the others).`
      : 'Add CreateOutboxMessagesTable1796428800000 (subclassed with the table\'s name if it is not the default) to the data source\'s migrations and run them.'),
  outboxSchemaMissingMariaDb: (table: string, missing: readonly string[], sqlFiles: boolean) =>
    `The outbox (table ${table} and its ordering keys' table ${table}_keys) lacks what this version of nestjs-idempotent-consumer needs: ${missing.join('; ')}. ` +
    (!sqlFiles
      ? "Add CreateOutboxMessagesTableMariaDb1796688000000 (subclassed with the table's name if it is not the default) to the data source's migrations and run them."
      : table === 'outbox_messages'
      ? "Run the package's sql/mariadb/1796688000000-create-outbox-messages-table.sql with your migration tool."
      : `Run the SQL that mariaDbOutboxSql('${table}') answers with your migration tool.`),
  kafkaOffsetsSchemaMissing: (table: string, sqlFiles: boolean) =>
    `kafkaOffsets is on, and the table ${table} of the Kafka consumers' positions is missing. ` +
    (sqlFiles
      ? "Run the package's sql/1796515200000-create-kafka-offsets-table.sql with your migration tool (npx nestjs-idempotent-consumer-sql prints it with the others)."
      : "Add CreateKafkaOffsetsTable1796515200000 to the data source's migrations and run them."),
  functionDropped: (table: string, missing: readonly string[]) =>
    `The processed-messages store (table ${table}) lacks what this version of nestjs-idempotent-consumer needs: ${missing.join('; ')}. ` +
    'It was there when the application started, so it was dropped since, and TypeORM will not run the migrations it has ' +
    `recorded again: ${recreateFunctions(table)}`,
};

/** Why a sealed record cannot be opened, and what to do: the end of a sentence. */
function unreadableCause(reason: string, keyId: string | null, version: number, configured: readonly string[]): string {
  return reason === 'no-encryption'
    ? `it was sealed with the key '${keyId}', and the module has no encryption option. Configure encryption.keys with that key.`
    : reason === 'unknown-key'
      ? `it was sealed with the key '${keyId}', which is not in encryption.keys (${configured.map((id) => `'${id}'`).join(', ')}). ` +
        'Put that key back in encryption.keys while records sealed with it are kept (their retention).'
      : reason === 'not-authentic'
        ? `it did not authenticate under the key '${keyId}' of encryption.keys: the record was altered or moved from another ` +
          `consumer or key, or encryption.keys['${keyId}'] is not the key that sealed it.`
        : `it is sealed in format ${version}, which this version of nestjs-idempotent-consumer does not read; upgrade the module.`;
}

const CREATE_TABLE = 'CreateProcessedMessagesTable1764633600000';
const CREATE_FUNCTIONS = 'CreateProcessedMessagesFunctions1796256000000';

/** How to bring back the claim's functions when the migrations that create them are recorded as run. */
function recreateFunctions(table: string): string {
  const argument = table === DEFAULT_TABLE_NAME ? '' : `'${table}'`;
  return (
    "recreate the claim's functions by running UpgradeProcessedMessagesTable1796342400000's up() once more, which (re)creates " +
    'both with CREATE OR REPLACE and changes nothing else on a table of the current shape: with a query runner of the data ' +
    `source, \`await new UpgradeProcessedMessagesTable1796342400000(${argument}).up(queryRunner)\` (or your subclass of it), ` +
    "or delete that migration's row from TypeORM's migrations table and run the migrations again."
  );
}

/** `a`, `a and b`, `a, b and c`. */
/** `CreateProcessedMessagesTable1764633600000` -> `1764633600000-create-processed-messages-table.sql`, the package's file of that migration. */
function sqlFileOf(migration: string): string {
  const [, words, timestamp] = /^(\D+)(\d+)$/.exec(migration)!;
  return `${timestamp}-${words.replace(/(?<!^)([A-Z])/g, '-$1').toLowerCase()}.sql`;
}

function listed(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}
