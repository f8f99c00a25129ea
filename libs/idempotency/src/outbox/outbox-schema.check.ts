import { Injectable } from '@nestjs/common';
import { StoreHandle } from '../store/store.handle.js';
import { IdempotencySchemaError } from '../errors/idempotency.errors.js';
import { MARIADB_DIALECT } from '../dialects/mariadb/mariadb.dialect.js';
import { SchemaBootCheck } from '../schema/schema-boot-check.js';
import { StoreSchemaCheck } from '../discovery/store-schema.check.js';

/** The columns the outbox and its relay use. */
export const OUTBOX_COLUMNS = [
  'seq', 'id', 'destination', 'address', 'pattern', 'headers', 'payload', 'ordering_key',
  'created_at', 'attempts', 'next_attempt_at', 'last_error', 'dispatched_at', 'dead_lettered_at',
] as const;

/**
 * With an `outbox`, refuses to start when its table is missing or lacks a column the outbox and
 * its relay use (`IdempotencySchemaError`, naming the migration); the relay starts only after it passed.
 * It checks after the processed-messages store's check, and not at all when that one refused the
 * start: one error, the store's first.
 * @internal
 */
@Injectable()
export class OutboxSchemaCheck extends SchemaBootCheck {
  constructor(
    private readonly store: StoreHandle,
    storeSchema: StoreSchemaCheck,
  ) {
    super(storeSchema);
  }

  /** What the outbox table lacks now; undefined when nothing (or there is no outbox). */
  async inspect(): Promise<IdempotencySchemaError | undefined> {
    const table = this.store.outboxTable;
    if (table === null) {
      return undefined;
    }
    const { dialect } = this.store;
    const { rows } = await this.store.query<{ name: string }>(dialect.outbox.outboxColumnsSql, [table]);
    const columns = rows.map((row) => row.name);
    const missing = columns.length === 0 ? [`the table ${table}`] : OUTBOX_COLUMNS.filter((column) => !columns.includes(column)).map((column) => `the column ${column}`);
    const mariaDb = dialect === MARIADB_DIALECT;
    return missing.length === 0
      ? undefined
      : new IdempotencySchemaError(table, missing, [mariaDb ? 'CreateOutboxMessagesTableMariaDb1796688000000' : 'CreateOutboxMessagesTable1796428800000'], {
          outbox: true,
          mariaDb,
          sqlFiles: this.store.adviseSqlFiles,
        });
  }
}
