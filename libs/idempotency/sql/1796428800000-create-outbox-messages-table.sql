-- nestjs-idempotent-consumer: migration 1796428800000-create-outbox-messages-table
-- (the TypeORM migration CreateOutboxMessagesTable1796428800000 as SQL) for the table "outbox_messages".
-- Run the library's migrations in the order of their timestamps, each once: this one after those before it.
-- Never edit it: a later version of the library adds new migrations instead.

CREATE TABLE "outbox_messages" (
        seq bigint GENERATED ALWAYS AS IDENTITY,
        id varchar(255) NOT NULL,
        destination varchar(255) NOT NULL,
        address varchar(1024) NOT NULL,
        pattern varchar(1024),
        headers json NOT NULL,
        payload text NOT NULL,
        ordering_key varchar(255),
        created_at timestamptz NOT NULL DEFAULT now(),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        last_error text,
        dispatched_at timestamptz,
        dead_lettered_at timestamptz,
        CONSTRAINT "outbox_messages_pkey" PRIMARY KEY (seq),
        CONSTRAINT "outbox_messages_id_key" UNIQUE (id)
      );

CREATE INDEX "outbox_messages_pending" ON "outbox_messages" (seq) WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL;

CREATE INDEX "outbox_messages_ordering" ON "outbox_messages" (ordering_key, seq) WHERE dispatched_at IS NULL AND ordering_key IS NOT NULL;

CREATE INDEX "outbox_messages_dispatched" ON "outbox_messages" (dispatched_at) WHERE dispatched_at IS NOT NULL;

CREATE INDEX "outbox_messages_dead_lettered" ON "outbox_messages" (dead_lettered_at) WHERE dead_lettered_at IS NOT NULL;
