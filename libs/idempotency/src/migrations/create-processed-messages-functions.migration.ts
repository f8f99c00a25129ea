import type { MigrationInterface, QueryRunner } from '../optional/typeorm-types.js';
import { DEFAULT_TABLE_NAME } from '../idempotency.constants.js';

/**
 * Creates the two functions the claim calls: `<table>_claim` inserts the message's row (or finds
 * it taken) and `<table>_record` records the response on it. PL/pgSQL keeps their statements'
 * plans for the life of each database connection, so a claim is not parsed and planned again on
 * every message, and they work behind any pooler (a function is no session state). Add it to your
 * data source's `migrations` after `CreateProcessedMessagesTable1764633600000`; for another table
 * name, subclass it as you subclass that one.
 *
 * The claim waits at most 50 ms for an uncommitted twin (its `lock_timeout`), then fails with
 * 55P03 (lock not available), which the module answers by its in-flight policy.
 *
 * Released: its SQL must never change. The names and the 50 ms are written here literally, not
 * read from the module's code, so that a later version of the module cannot change what this
 * migration created; `UpgradeProcessedMessagesTable1796342400000` brings the functions up to date.
 */
export class CreateProcessedMessagesFunctions1796256000000 implements MigrationInterface {
  constructor(private readonly tableName: string = DEFAULT_TABLE_NAME) {}

  async up(queryRunner: QueryRunner): Promise<void> {
    const table = this.tableName;
    await queryRunner.query(`
      CREATE FUNCTION "${table}_claim"(p_consumer text, p_message_id text, p_sender text, p_fingerprint text, p_retention_ms bigint)
      RETURNS boolean LANGUAGE plpgsql SET lock_timeout = 50 AS $$
      BEGIN
        INSERT INTO "${table}" (consumer, message_id, sender, fingerprint, expires_at)
        VALUES (p_consumer, p_message_id, p_sender, p_fingerprint, now() + p_retention_ms * interval '1 millisecond')
        ON CONFLICT ON CONSTRAINT "${table}_pkey" DO NOTHING;
        RETURN FOUND;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION "${table}_record"(p_consumer text, p_message_id text, p_status integer, p_headers json, p_body bytea)
      RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE "${table}" SET response_status = p_status, response_headers = p_headers, response_body = p_body
        WHERE consumer = p_consumer AND message_id = p_message_id;
      END $$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION "${this.tableName}_record"(text, text, integer, json, bytea)`);
    await queryRunner.query(`DROP FUNCTION "${this.tableName}_claim"(text, text, text, text, bigint)`);
  }
}
