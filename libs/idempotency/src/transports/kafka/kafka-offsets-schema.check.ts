import { Injectable } from '@nestjs/common';
import { StoreSchemaCheck } from '../../discovery/store-schema.check.js';
import { IdempotencySchemaError } from '../../errors/idempotency.errors.js';
import { KAFKA_OFFSETS_TABLE_NAME } from '../../idempotency.constants.js';
import { SchemaBootCheck } from '../../schema/schema-boot-check.js';
import { StoreHandle } from '../../store/store.handle.js';
import { KafkaOffsets } from './kafka-offsets.js';

/**
 * With `kafkaOffsets: true`, refuses to start when the table of the Kafka consumers' positions is
 * missing (`IdempotencySchemaError`, naming the migration). It checks after the processed-messages
 * store's check, and not at all when that one refused the start: one error, the store's first.
 * @internal
 */
@Injectable()
export class KafkaOffsetsSchemaCheck extends SchemaBootCheck {
  constructor(
    private readonly offsets: KafkaOffsets,
    private readonly store: StoreHandle,
    storeSchema: StoreSchemaCheck,
  ) {
    super(storeSchema);
  }

  async inspect(): Promise<IdempotencySchemaError | undefined> {
    if (!this.offsets.enabled) {
      return undefined;
    }
    const {
      rows: [{ present }],
    } = await this.store.query<{ present: boolean }>('SELECT to_regclass(quote_ident($1)) IS NOT NULL AS present', [KAFKA_OFFSETS_TABLE_NAME]);
    return present
      ? undefined
      : new IdempotencySchemaError(KAFKA_OFFSETS_TABLE_NAME, [`the table ${KAFKA_OFFSETS_TABLE_NAME}`], ['CreateKafkaOffsetsTable1796515200000'], {
          kafkaOffsets: true,
          sqlFiles: this.store.adviseSqlFiles,
        });
  }
}
