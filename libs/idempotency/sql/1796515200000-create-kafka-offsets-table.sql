-- nestjs-idempotent-consumer: migration 1796515200000-create-kafka-offsets-table
-- (the TypeORM migration CreateKafkaOffsetsTable1796515200000 as SQL) for the table "kafka_offsets".
-- Run the library's migrations in the order of their timestamps, each once: this one after those before it.
-- Never edit it: a later version of the library adds new migrations instead.

CREATE TABLE "kafka_offsets" (
        group_id varchar(255) NOT NULL,
        topic varchar(255) NOT NULL,
        "partition" integer NOT NULL,
        next_offset bigint NOT NULL,
        CONSTRAINT "kafka_offsets_pkey" PRIMARY KEY (group_id, topic, "partition")
      );
