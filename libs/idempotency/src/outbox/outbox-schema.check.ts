import { Inject, Injectable } from '@nestjs/common';
import { DataLayerJoin } from '../data-layers/data-layer-join.js';
import { IdempotencySchemaError } from '../errors/idempotency.errors.js';
import { SchemaBootCheck } from '../schema/schema-boot-check.js';
import { StoreSchemaCheck } from '../discovery/store-schema.check.js';
import { OUTBOX_OPTIONS, type ResolvedOutboxOptions } from './outbox.options.js';
import { OUTBOX_COLUMNS, outboxColumnsSql } from './outbox.queries.js';

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
    @Inject(OUTBOX_OPTIONS) private readonly outbox: ResolvedOutboxOptions | null,
    private readonly join: DataLayerJoin,
    private readonly store: StoreSchemaCheck,
  ) {
    super();
  }

  protected override precondition(): Promise<boolean> {
    return this.store.passed();
  }

  /** What the outbox table lacks now; undefined when nothing (or there is no outbox). */
  async inspect(): Promise<IdempotencySchemaError | undefined> {
    if (this.outbox === null) {
      return undefined;
    }
    const table = this.outbox.tableName;
    const {
      rows: [{ columns }],
    } = await this.join.query<{ columns: string[] | null }>(outboxColumnsSql, [table]);
    const missing = columns === null ? [`the table ${table}`] : OUTBOX_COLUMNS.filter((column) => !columns.includes(column)).map((column) => `the column ${column}`);
    return missing.length === 0
      ? undefined
      : new IdempotencySchemaError(table, missing, ['CreateOutboxMessagesTable1796428800000'], { outbox: true, sqlFiles: this.join.layer.schemaAdvice === 'sql-files' });
  }
}
