import type { MigrationInterface, QueryRunner } from '../optional/typeorm-types.js';
import { DEFAULT_OUTBOX_TABLE_NAME } from '../idempotency.constants.js';

/**
 * Creates the outbox table: one row per message a handler (or a transaction of yours) published
 * through `Outbox`, written in that transaction and sent by the relay after it committed. Add it to
 * your data source's `migrations` when you use the outbox; for another table name, subclass it and
 * pass the name to `super()`, and give the same name as `outbox.tableName`.
 *
 * - `seq` orders the messages (the relay sends them in this order, and per `ordering_key` one at a time);
 * - `id` is the message's stable id: the downstream consumer's idempotency key, unique;
 * - `dispatched_at` is set when the broker confirmed the message; `dead_lettered_at` when the
 *   relay gave up on it after its attempts (the admin requeues or discards it).
 *
 * Released: its SQL must never change; a later version of the module adds a migration instead.
 */
export class CreateOutboxMessagesTable1796428800000 implements MigrationInterface {
  constructor(private readonly tableName: string = DEFAULT_OUTBOX_TABLE_NAME) {}

  async up(queryRunner: QueryRunner): Promise<void> {
    const table = this.tableName;
    await queryRunner.query(`
      CREATE TABLE "${table}" (
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
        CONSTRAINT "${table}_pkey" PRIMARY KEY (seq),
        CONSTRAINT "${table}_id_key" UNIQUE (id)
      )`);
    await queryRunner.query(`CREATE INDEX "${table}_pending" ON "${table}" (seq) WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL`);
    await queryRunner.query(`CREATE INDEX "${table}_ordering" ON "${table}" (ordering_key, seq) WHERE dispatched_at IS NULL AND ordering_key IS NOT NULL`);
    await queryRunner.query(`CREATE INDEX "${table}_dispatched" ON "${table}" (dispatched_at) WHERE dispatched_at IS NOT NULL`);
    await queryRunner.query(`CREATE INDEX "${table}_dead_lettered" ON "${table}" (dead_lettered_at) WHERE dead_lettered_at IS NOT NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "${this.tableName}"`);
  }
}
