import { Injectable } from '@nestjs/common';
import { StoreHandle } from '../store/store.handle.js';
import { IdempotencyOptionsError, IdempotencySchemaError } from '../errors/idempotency.errors.js';
import { outboxMessages } from './outbox.messages.js';
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
    if (this.store.dialect.outbox === null) {
      throw new IdempotencyOptionsError(outboxMessages.notOnDatabase(this.store.dialect.name));
    }
    const {
      rows: [{ columns }],
    } = await this.store.query<{ columns: string[] | null }>(this.store.dialect.outbox!.outboxColumnsSql, [table]);
    const missing = columns === null ? [`the table ${table}`] : OUTBOX_COLUMNS.filter((column) => !columns.includes(column)).map((column) => `the column ${column}`);
    return missing.length === 0
      ? undefined
      : new IdempotencySchemaError(table, missing, ['CreateOutboxMessagesTable1796428800000'], { outbox: true, sqlFiles: this.store.adviseSqlFiles });
  }
}
