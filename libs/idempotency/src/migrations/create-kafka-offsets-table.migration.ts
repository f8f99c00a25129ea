import type { MigrationInterface, QueryRunner } from '../optional/typeorm-types.js';
import { KAFKA_OFFSETS_TABLE_NAME } from '../idempotency.constants.js';

/**
 * Creates the table of the Kafka consumers' positions: per consumer group, topic and partition, the
 * offset of the next record to read, written in the claim's transaction with the work it did. Add it
 * to your data source's `migrations` when you set `kafkaOffsets: true`. Its name, `kafka_offsets`, is fixed.
 *
 * Released: its SQL must never change; a later version of the module adds a migration instead.
 */
export class CreateKafkaOffsetsTable1796515200000 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    const table = KAFKA_OFFSETS_TABLE_NAME;
    await queryRunner.query(`
      CREATE TABLE "${table}" (
        group_id varchar(255) NOT NULL,
        topic varchar(255) NOT NULL,
        "partition" integer NOT NULL,
        next_offset bigint NOT NULL,
        CONSTRAINT "${table}_pkey" PRIMARY KEY (group_id, topic, "partition")
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "${KAFKA_OFFSETS_TABLE_NAME}"`);
  }
}
