-- nestjs-idempotent-consumer: migration 1796256000000-create-processed-messages-functions
-- (the TypeORM migration CreateProcessedMessagesFunctions1796256000000 as SQL) for the table "processed_messages".
-- Run the library's migrations in the order of their timestamps, each once: this one after those before it.
-- Never edit it: a later version of the library adds new migrations instead.

CREATE FUNCTION "processed_messages_claim"(p_consumer text, p_message_id text, p_sender text, p_fingerprint text, p_retention_ms bigint)
      RETURNS boolean LANGUAGE plpgsql SET lock_timeout = 50 AS $$
      BEGIN
        INSERT INTO "processed_messages" (consumer, message_id, sender, fingerprint, expires_at)
        VALUES (p_consumer, p_message_id, p_sender, p_fingerprint, now() + p_retention_ms * interval '1 millisecond')
        ON CONFLICT ON CONSTRAINT "processed_messages_pkey" DO NOTHING;
        RETURN FOUND;
      END $$;

CREATE FUNCTION "processed_messages_record"(p_consumer text, p_message_id text, p_status integer, p_headers json, p_body bytea)
      RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE "processed_messages" SET response_status = p_status, response_headers = p_headers, response_body = p_body
        WHERE consumer = p_consumer AND message_id = p_message_id;
      END $$;
