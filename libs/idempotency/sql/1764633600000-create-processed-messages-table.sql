-- nestjs-idempotent-consumer: migration 1764633600000-create-processed-messages-table
-- (the TypeORM migration CreateProcessedMessagesTable1764633600000 as SQL) for the table "processed_messages".
-- Run the library's migrations in the order of their timestamps, each once: this one after those before it.
-- Never edit it: a later version of the library adds new migrations instead.

CREATE TABLE "processed_messages" (
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
        CONSTRAINT "processed_messages_pkey" PRIMARY KEY (consumer, message_id)
      );

CREATE INDEX "processed_messages_expires_at_idx" ON "processed_messages" (expires_at);
