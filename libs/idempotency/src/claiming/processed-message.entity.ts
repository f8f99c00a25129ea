import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';
import { DEFAULT_TABLE_NAME } from '../idempotency.constants.js';

/** The name the migration gives the table's primary key, which both primary columns must carry. */
const PRIMARY_KEY_NAME = `${DEFAULT_TABLE_NAME}_pkey`;

/**
 * A processed (or in-flight) message: the claim row. Register it with TypeORM to read the store;
 * the module itself writes it with plain SQL. It maps the default table name, column for column
 * as the migrations create it (a schema diff against a migrated database finds nothing to change).
 *
 * @example
 * ```ts
 * TypeOrmModule.forRoot({ ..., entities: [ProcessedMessage, ...yours] });
 *
 * const claim = await dataSource.getRepository(ProcessedMessage).findOneBy({ consumer, messageId });
 * ```
 */
@Entity(DEFAULT_TABLE_NAME)
@Index('processed_messages_expires_at_idx', ['expiresAt'])
export class ProcessedMessage {
  /** The handler the message was claimed for. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: PRIMARY_KEY_NAME })
  consumer: string;

  /** The message's idempotency key. */
  @PrimaryColumn({ name: 'message_id', type: 'varchar', length: 255, primaryKeyConstraintName: PRIMARY_KEY_NAME })
  messageId: string;

  /** Who sent it. */
  @Column({ type: 'text' })
  sender: string;

  /** SHA-256 (hex) of what identifies the operation, to refuse a reused key with another payload; null when not compared. */
  @Column({ type: 'char', length: 64, nullable: true })
  fingerprint: string | null;

  /** The HTTP status replayed to duplicates; null for message handlers. */
  @Column({ name: 'response_status', type: 'smallint', nullable: true })
  responseStatus: number | null;

  /** The HTTP headers replayed to duplicates, by name in the casing it was sent with (lower-case in older rows); null for message handlers. */
  @Column({ name: 'response_headers', type: 'json', nullable: true })
  responseHeaders: Record<string, string | string[]> | null;

  /** The body replayed to duplicates, as the client received it; a message handler's reply as JSON. */
  @Column({ name: 'response_body', type: 'bytea', nullable: true })
  responseBody: Buffer | null;

  /** When the claim was made, by the database's clock. */
  @CreateDateColumn({ name: 'processed_at', type: 'timestamptz' })
  processedAt: Date;

  /** From when the purge may delete the row (the database's clock). */
  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  /** Lease mode: the token of the delivery that holds the message while it is processed; null once completed. */
  @Column({ name: 'lease_token', type: 'uuid', nullable: true })
  leaseToken: string | null;

  /** Lease mode: when the lease runs out and another delivery may take the message over. */
  @Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true })
  leaseExpiresAt: Date | null;
}
