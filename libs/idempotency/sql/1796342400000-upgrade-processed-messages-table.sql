-- nestjs-idempotent-consumer: migration 1796342400000-upgrade-processed-messages-table
-- (the TypeORM migration UpgradeProcessedMessagesTable1796342400000 as SQL) for the table "processed_messages".
-- Run the library's migrations in the order of their timestamps, each once: this one after those before it.
-- Never edit it: a later version of the library adds new migrations instead.

DO $upgrade$
      DECLARE
        missing_columns boolean := NOT EXISTS (
          SELECT FROM pg_attribute WHERE attrelid = '"processed_messages"'::regclass AND attname = 'lease_expires_at' AND NOT attisdropped
        ) OR NOT EXISTS (
          SELECT FROM pg_attribute WHERE attrelid = '"processed_messages"'::regclass AND attname = 'lease_token' AND NOT attisdropped
        ) OR NOT EXISTS (
          SELECT FROM pg_attribute WHERE attrelid = '"processed_messages"'::regclass AND attname = 'response_headers' AND NOT attisdropped
        );
        fingerprint_required boolean := EXISTS (
          SELECT FROM pg_attribute WHERE attrelid = '"processed_messages"'::regclass AND attname = 'fingerprint' AND attnotnull
        );
        json_body boolean := EXISTS (
          SELECT FROM pg_attribute WHERE attrelid = '"processed_messages"'::regclass AND attname = 'response_body' AND atttypid = 'json'::regtype
        );
      BEGIN
        IF missing_columns OR fingerprint_required THEN
          ALTER TABLE "processed_messages"
            ADD COLUMN IF NOT EXISTS response_headers json,
            ADD COLUMN IF NOT EXISTS lease_token uuid,
            ADD COLUMN IF NOT EXISTS lease_expires_at timestamptz,
            ALTER COLUMN fingerprint DROP NOT NULL;
        END IF;
        IF json_body THEN
          UPDATE "processed_messages" SET
            fingerprint = NULL,
            response_headers = CASE WHEN json_typeof(response_body) IN ('object', 'array')
              THEN '{"content-type":"application/json; charset=utf-8"}'::json END;
          ALTER TABLE "processed_messages" ALTER COLUMN response_body TYPE bytea USING CASE json_typeof(response_body)
            WHEN 'null' THEN NULL
            WHEN 'string' THEN convert_to(response_body #>> '{}', 'UTF8')
            ELSE convert_to(response_body::text, 'UTF8')
          END;
        END IF;
      END $upgrade$;

CREATE OR REPLACE FUNCTION "processed_messages_claim"(p_consumer text, p_message_id text, p_sender text, p_fingerprint text, p_retention_ms bigint)
      RETURNS boolean LANGUAGE plpgsql SET lock_timeout = 50 AS $$
      BEGIN
        INSERT INTO "processed_messages" (consumer, message_id, sender, fingerprint, expires_at)
        VALUES (p_consumer, p_message_id, p_sender, p_fingerprint, now() + p_retention_ms * interval '1 millisecond')
        ON CONFLICT ON CONSTRAINT "processed_messages_pkey" DO NOTHING;
        RETURN FOUND;
      END $$;

CREATE OR REPLACE FUNCTION "processed_messages_record"(p_consumer text, p_message_id text, p_status integer, p_headers json, p_body bytea)
      RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE "processed_messages" SET response_status = p_status, response_headers = p_headers, response_body = p_body
        WHERE consumer = p_consumer AND message_id = p_message_id;
      END $$;
