import type { MigrationInterface, QueryRunner } from '../optional/typeorm-types.js';
import { DEFAULT_TABLE_NAME } from '../idempotency.constants.js';

/**
 * Creates the processed-messages table. Add it to your data source's `migrations`; for another
 * table name, subclass it:
 *
 * @example
 * ```ts
 * export class CreateBillingProcessed1764633600001 extends CreateProcessedMessagesTable1764633600000 {
 *   constructor() { super('billing_processed'); }
 * }
 * ```
 */
export class CreateProcessedMessagesTable1764633600000 implements MigrationInterface {
  constructor(private readonly tableName: string = DEFAULT_TABLE_NAME) {}

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "${this.tableName}" (
        consumer text NOT NULL,
        message_id varchar(255) NOT NULL,
        sender text NOT NULL,
        fingerprint char(64),
        response_status smallint,
        response_headers json,
        response_body bytea,
        processed_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        lease_token uuid,
        lease_expires_at timestamptz,
        CONSTRAINT "${this.tableName}_pkey" PRIMARY KEY (consumer, message_id)
      )`);
    await queryRunner.query(`CREATE INDEX "${this.tableName}_expires_at_idx" ON "${this.tableName}" (expires_at)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "${this.tableName}"`);
  }
}
