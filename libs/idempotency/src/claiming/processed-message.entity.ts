import { DEFAULT_TABLE_NAME } from '../idempotency.constants.js';
import { loadIfInstalled } from '../optional/load-optional-package.js';

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
export class ProcessedMessage {
  /** The handler the message was claimed for. */
  consumer: string;

  /** The message's idempotency key. */
  messageId: string;

  /** Who sent it. */
  sender: string;

  /** SHA-256 (hex) of what identifies the operation, to refuse a reused key with another payload; null when not compared. */
  fingerprint: string | null;

  /** The HTTP status replayed to duplicates; null for message handlers. */
  responseStatus: number | null;

  /** The HTTP headers replayed to duplicates, by name in the casing it was sent with (lower-case in older rows); null for message handlers. */
  responseHeaders: Record<string, string | string[]> | null;

  /** The body replayed to duplicates, as the client received it; a message handler's reply as JSON. */
  responseBody: Buffer | null;

  /** When the claim was made, by the database's clock. */
  processedAt: Date;

  /** From when the purge may delete the row (the database's clock). */
  expiresAt: Date;

  /** Lease mode: the token of the delivery that holds the message while it is processed; null once completed. */
  leaseToken: string | null;

  /** Lease mode: when the lease runs out and another delivery may take the message over. */
  leaseExpiresAt: Date | null;
}

/*
 * The mapping, applied when TypeORM is installed: the module itself needs no TypeORM (another data
 * layer's application loads it without), and TypeORM's application gets the entity as declared.
 */
const typeorm = await loadIfInstalled(() => import('typeorm'));
if (typeorm) {
  const { Column, CreateDateColumn, Entity, Index, PrimaryColumn } = typeorm;
  PrimaryColumn({ type: 'text', primaryKeyConstraintName: PRIMARY_KEY_NAME })(ProcessedMessage.prototype, 'consumer');
  PrimaryColumn({ name: 'message_id', type: 'varchar', length: 255, primaryKeyConstraintName: PRIMARY_KEY_NAME })(ProcessedMessage.prototype, 'messageId');
  Column({ type: 'text' })(ProcessedMessage.prototype, 'sender');
  Column({ type: 'char', length: 64, nullable: true })(ProcessedMessage.prototype, 'fingerprint');
  Column({ name: 'response_status', type: 'smallint', nullable: true })(ProcessedMessage.prototype, 'responseStatus');
  Column({ name: 'response_headers', type: 'json', nullable: true })(ProcessedMessage.prototype, 'responseHeaders');
  Column({ name: 'response_body', type: 'bytea', nullable: true })(ProcessedMessage.prototype, 'responseBody');
  CreateDateColumn({ name: 'processed_at', type: 'timestamptz' })(ProcessedMessage.prototype, 'processedAt');
  Column({ name: 'expires_at', type: 'timestamptz' })(ProcessedMessage.prototype, 'expiresAt');
  Column({ name: 'lease_token', type: 'uuid', nullable: true })(ProcessedMessage.prototype, 'leaseToken');
  Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true })(ProcessedMessage.prototype, 'leaseExpiresAt');
  Index('processed_messages_expires_at_idx', ['expiresAt'])(ProcessedMessage);
  Entity(DEFAULT_TABLE_NAME)(ProcessedMessage);
}
