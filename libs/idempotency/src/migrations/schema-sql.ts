import type { MigrationInterface, QueryRunner } from '../optional/typeorm-types.js';
import { toTableName } from '../data-layers/table-name.js';
import { IdempotencyError } from '../errors/idempotency.errors.js';
import { DEFAULT_OUTBOX_TABLE_NAME, DEFAULT_TABLE_NAME, KAFKA_OFFSETS_TABLE_NAME } from '../idempotency.constants.js';
import { CreateKafkaOffsetsTable1796515200000 } from './create-kafka-offsets-table.migration.js';
import { CreateOutboxMessagesTable1796428800000 } from './create-outbox-messages-table.migration.js';
import { CreateProcessedMessagesFunctions1796256000000 } from './create-processed-messages-functions.migration.js';
import { CreateProcessedMessagesTable1764633600000 } from './create-processed-messages-table.migration.js';
import { migrationMessages } from './migration.messages.js';
import { UpgradeProcessedMessagesTable1796342400000 } from './upgrade-processed-messages-table.migration.js';

/** One of the library's migrations as plain SQL: what its TypeORM migration class's `up()` runs. */
export interface SchemaMigrationSql {
  /**
   * `<timestamp>-<kebab-case name>`, such as `1764633600000-create-processed-messages-table`: the
   * timestamp of the TypeORM migration class, which orders the migrations. The package ships the
   * default table's SQL as `sql/<name>.sql`.
   */
  readonly name: string;
  /**
   * A comment naming the migration, then its statements, each ended by `;`, as the migration sends
   * them: one script, to be run once, after the migrations before it.
   */
  readonly sql: string;
}

/**
 * The library's migrations in the order they run, each under its name. Written out rather than
 * read from the class names, which a bundler may shorten.
 */
const MIGRATIONS: readonly (readonly [name: string, migration: new (tableName: string) => MigrationInterface, table: 'store' | 'outbox' | 'kafkaOffsets'])[] = [
  ['1764633600000-create-processed-messages-table', CreateProcessedMessagesTable1764633600000, 'store'],
  ['1796256000000-create-processed-messages-functions', CreateProcessedMessagesFunctions1796256000000, 'store'],
  ['1796342400000-upgrade-processed-messages-table', UpgradeProcessedMessagesTable1796342400000, 'store'],
  ['1796428800000-create-outbox-messages-table', CreateOutboxMessagesTable1796428800000, 'outbox'],
  ['1796515200000-create-kafka-offsets-table', CreateKafkaOffsetsTable1796515200000, 'kafkaOffsets'],
];

/**
 * The SQL of the library's migrations, in the order they must run, for a service whose migrations
 * are not TypeORM's (Prisma, Drizzle, Kysely, plain `pg`, Flyway...): each migration's `up()` is
 * run against a stand-in for TypeORM's `QueryRunner` that records its statements, so this SQL is
 * the migrations' own. A released migration never changes; a new version of the library adds new
 * ones at the end. The package ships the default table's SQL in its `sql/` folder, and the
 * `nestjs-idempotent-consumer-sql` command prints it.
 *
 * @param tableName the table's name, as given to `IdempotencyModule.forRoot({ tableName })`;
 *   `'processed_messages'` (`DEFAULT_TABLE_NAME`) when omitted.
 * @param outboxTableName the outbox table's name, as given as `outbox.tableName`; `'outbox_messages'`
 *   (`DEFAULT_OUTBOX_TABLE_NAME`) when omitted. Its migration is needed only where the outbox is used,
 *   as the Kafka positions' table's only with `kafkaOffsets: true`.
 * @throws IdempotencyOptionsError when a table name is not a plain PostgreSQL identifier of at most 56 characters.
 *
 * @example
 * ```ts
 * // A Kysely migration of your service, for the library's first migration:
 * const [first] = await schemaSql('order_claims');
 * await sql.raw(first.sql).execute(db);
 * ```
 */
export async function schemaSql(tableName: string = DEFAULT_TABLE_NAME, outboxTableName: string = DEFAULT_OUTBOX_TABLE_NAME): Promise<SchemaMigrationSql[]> {
  const tables = { store: toTableName(tableName), outbox: toTableName(outboxTableName, 'outbox.tableName'), kafkaOffsets: KAFKA_OFFSETS_TABLE_NAME };
  const migrations: SchemaMigrationSql[] = [];
  for (const [name, migration, of] of MIGRATIONS) {
    const table = tables[of];
    const className = classNameOf(name);
    const statements: string[] = [];
    await new migration(table).up(recordingQueryRunner(className, statements));
    migrations.push({ name, sql: header(name, className, table) + statements.map((statement) => `${statement.trim()};\n`).join('\n') });
  }
  return migrations;
}

/** `1764633600000-create-processed-messages-table` -> `CreateProcessedMessagesTable1764633600000`. */
function classNameOf(name: string): string {
  const [timestamp, ...words] = name.split('-');
  return words.map((word) => word[0].toUpperCase() + word.slice(1)).join('') + timestamp;
}

function header(name: string, className: string, table: string): string {
  return (
    `-- nestjs-idempotent-consumer: migration ${name}\n` +
    `-- (the TypeORM migration ${className} as SQL) for the table "${table}".\n` +
    "-- Run the library's migrations in the order of their timestamps, each once: this one after those before it.\n" +
    '-- Never edit it: a later version of the library adds new migrations instead.\n\n'
  );
}

/**
 * A stand-in for TypeORM's `QueryRunner` that keeps the text of each `query(text)` call in
 * `statements`, and fails on anything else a migration might use (parameters, the schema builder
 * API), which plain SQL could not carry.
 */
function recordingQueryRunner(className: string, statements: string[]): QueryRunner {
  const query = async (...args: unknown[]): Promise<unknown[]> => {
    if (args.length !== 1 || typeof args[0] !== 'string') {
      throw new IdempotencyError(migrationMessages.notRecordable(className, 'query() with parameters'));
    }
    statements.push(args[0]);
    return [];
  };
  return new Proxy({} as QueryRunner, {
    get: (_target, property) => {
      if (property === 'query') {
        return query;
      }
      throw new IdempotencyError(migrationMessages.notRecordable(className, `\`${String(property)}\``));
    },
  });
}
