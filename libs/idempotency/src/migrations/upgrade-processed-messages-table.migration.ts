import type { MigrationInterface, QueryRunner } from '../optional/typeorm-types.js';
import { DEFAULT_TABLE_NAME } from '../idempotency.constants.js';

/**
 * Brings a processed-messages table created by any earlier version of the module to the shape
 * this version reads and writes, and (re)creates its two functions. Released versions of
 * `CreateProcessedMessagesTable1764633600000` created three shapes, and TypeORM never runs a
 * recorded migration again, so a database keeps the shape of the version that first ran it:
 *
 * - the first (0.1): `fingerprint` NOT NULL, `response_body json`, no `response_headers`, no lease columns;
 * - 0.2.0: `fingerprint` nullable, `response_headers json`, `response_body bytea`, no lease columns;
 * - later: the lease columns `lease_token uuid` and `lease_expires_at timestamptz` too.
 *
 * It adds the missing columns, lets `fingerprint` be NULL and turns a `json` response body into
 * the bytes a client was sent for it (an object or array: its JSON text, with the content type
 * `application/json; charset=utf-8`; a string, number or boolean: its text; JSON null: no body).
 * The first version computed fingerprints over the URL and body only, which this version
 * cannot reproduce, so the rows that version wrote keep no fingerprint: a retry of one within its
 * retention is replayed instead of refused as a reused key. Each step runs only when the table
 * still needs it, so on a table in the current shape it changes nothing and takes no table lock;
 * the functions are written with `CREATE OR REPLACE` to the same definitions as
 * `CreateProcessedMessagesFunctions1796256000000`. Its SQL is written here literally, never read
 * from the module's code, so that what it does never changes once released.
 *
 * Add it to your data source's `migrations` after the two others, every one of them subclassed
 * with the table's name if it is not the default, and run them:
 *
 * @example
 * ```ts
 * migrations: [
 *   CreateProcessedMessagesTable1764633600000,
 *   CreateProcessedMessagesFunctions1796256000000,
 *   UpgradeProcessedMessagesTable1796342400000,
 * ]
 * // for another table name:
 * export class UpgradeBillingProcessed1796342400001 extends UpgradeProcessedMessagesTable1796342400000 {
 *   constructor() { super('billing_processed'); }
 * }
 * ```
 */
export class UpgradeProcessedMessagesTable1796342400000 implements MigrationInterface {
  constructor(private readonly tableName: string = DEFAULT_TABLE_NAME) {}

  async up(queryRunner: QueryRunner): Promise<void> {
    const table = this.tableName;
    await queryRunner.query(`
      DO $upgrade$
      DECLARE
        missing_columns boolean := NOT EXISTS (
          SELECT FROM pg_attribute WHERE attrelid = '"${table}"'::regclass AND attname = 'lease_expires_at' AND NOT attisdropped
        ) OR NOT EXISTS (
          SELECT FROM pg_attribute WHERE attrelid = '"${table}"'::regclass AND attname = 'lease_token' AND NOT attisdropped
        ) OR NOT EXISTS (
          SELECT FROM pg_attribute WHERE attrelid = '"${table}"'::regclass AND attname = 'response_headers' AND NOT attisdropped
        );
        fingerprint_required boolean := EXISTS (
          SELECT FROM pg_attribute WHERE attrelid = '"${table}"'::regclass AND attname = 'fingerprint' AND attnotnull
        );
        json_body boolean := EXISTS (
          SELECT FROM pg_attribute WHERE attrelid = '"${table}"'::regclass AND attname = 'response_body' AND atttypid = 'json'::regtype
        );
      BEGIN
        IF missing_columns OR fingerprint_required THEN
          ALTER TABLE "${table}"
            ADD COLUMN IF NOT EXISTS response_headers json,
            ADD COLUMN IF NOT EXISTS lease_token uuid,
            ADD COLUMN IF NOT EXISTS lease_expires_at timestamptz,
            ALTER COLUMN fingerprint DROP NOT NULL;
        END IF;
        IF json_body THEN
          UPDATE "${table}" SET
            fingerprint = NULL,
            response_headers = CASE WHEN json_typeof(response_body) IN ('object', 'array')
              THEN '{"content-type":"application/json; charset=utf-8"}'::json END;
          ALTER TABLE "${table}" ALTER COLUMN response_body TYPE bytea USING CASE json_typeof(response_body)
            WHEN 'null' THEN NULL
            WHEN 'string' THEN convert_to(response_body #>> '{}', 'UTF8')
            ELSE convert_to(response_body::text, 'UTF8')
          END;
        END IF;
      END $upgrade$`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION "${table}_claim"(p_consumer text, p_message_id text, p_sender text, p_fingerprint text, p_retention_ms bigint)
      RETURNS boolean LANGUAGE plpgsql SET lock_timeout = 50 AS $$
      BEGIN
        INSERT INTO "${table}" (consumer, message_id, sender, fingerprint, expires_at)
        VALUES (p_consumer, p_message_id, p_sender, p_fingerprint, now() + p_retention_ms * interval '1 millisecond')
        ON CONFLICT ON CONSTRAINT "${table}_pkey" DO NOTHING;
        RETURN FOUND;
      END $$`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION "${table}_record"(p_consumer text, p_message_id text, p_status integer, p_headers json, p_body bytea)
      RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE "${table}" SET response_status = p_status, response_headers = p_headers, response_body = p_body
        WHERE consumer = p_consumer AND message_id = p_message_id;
      END $$`);
  }

  /**
   * Changes nothing, on purpose. The shapes `up()` starts from are those earlier versions left
   * behind, which this version cannot run on (a `json` body column, a required fingerprint, no
   * lease columns): restoring one would break the running code and could not give back the
   * bodies' JSON or the fingerprints cleared. What `up()` ensures belongs to the migrations
   * before it, whose `down()` remove it: the functions with
   * `CreateProcessedMessagesFunctions1796256000000`, the table with
   * `CreateProcessedMessagesTable1764633600000`.
   */
  async down(): Promise<void> {
    // Nothing to undo: see above.
  }
}
