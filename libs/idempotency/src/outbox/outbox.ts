import { Inject, Injectable, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { ActiveClaim } from '../context/idempotency.context.js';
import { CLAIM_STORAGE, type ClaimConnection, type TransactionStatements } from '../data-layers/data-layer.js';
import { IdempotencyOutboxError } from '../errors/idempotency.errors.js';
import type { OutgoingMessage } from './outbox-publisher.js';
import { OUTBOX_OPTIONS, type ResolvedOutboxOptions } from './outbox.options.js';
import { outboxMessages } from './outbox.messages.js';
import { type Duration, MAX_RETENTION_MS, toMilliseconds } from '../duration/duration.js';
import { type DialectSource, STORE_DIALECT } from '../data-layers/data-layer-join.js';
import type { OutboxDialect, OutboxDue } from '../dialects/store-dialect.js';
import { OutboxRelay } from './outbox-relay.js';

/** A message for `Outbox.publish()`. */
export interface OutboxMessage {
  /** The name of the publisher in `outbox.publishers` that sends it. */
  readonly to: string;
  /** Where that broker routes it: a queue or routing key (RabbitMQ), a subject (NATS JetStream), a queue (BullMQ), a queue URL (SQS). */
  readonly address: string;
  /** What is sent, as JSON. */
  readonly payload: unknown;
  /**
   * The message's stable id, which every publish of it carries where the consumer's transport
   * reads its key (AMQP `messageId`, `Nats-Msg-Id`, BullMQ `jobId`, SQS deduplication id): the
   * receiving idempotent consumer deduplicates by it. One message's, unique in the outbox table:
   * in a handler, build it from `IdempotencyContext.downstreamKey` and the event
   * (`` `${downstreamKey}:credit.granted` ``), the same for every retry of the request.
   * @default a random UUID, fixed when the message is written
   */
  readonly id?: string;
  /** Nest's message pattern, for a consumer that is a Nest microservice: the body is then `{ pattern, data: payload }`, as `ClientProxy.emit()` sends it. */
  readonly pattern?: string;
  /** Headers sent with it. */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Messages of one ordering key are published one at a time, in the order they were written,
   * which is the order their transactions committed: writing one locks the key until its
   * transaction ends, so the writers of a key take turns (SQS FIFO: the `MessageGroupId`).
   */
  readonly orderingKey?: string;
  /**
   * Sends it no sooner than this long after its transaction began (`'30s'`, `'2h'`): the relay
   * takes it at its first look after that (within `pollInterval`). A delayed message holds back
   * the later messages of its ordering key until it is sent. Not with `availableAt`.
   * @default none: as soon as its transaction committed
   */
  readonly delay?: Duration;
  /** Sends it no sooner than this moment, as `delay` does. Not with `delay`. @default none */
  readonly availableAt?: Date;
}

/** The fields of `OutboxMessage`: any other is refused, not ignored. */
const MESSAGE_FIELDS: ReadonlySet<string> = new Set(['to', 'address', 'payload', 'id', 'pattern', 'headers', 'orderingKey', 'delay', 'availableAt']);
/** The fields of `OutboxPublishOptions`. */
const OPTION_FIELDS: ReadonlySet<string> = new Set(['transaction']);

/** `Outbox.publish()`'s options. */
export interface OutboxPublishOptions {
  /**
   * A function that runs one SQL statement in a transaction you opened, for a message written
   * outside an idempotent handler (or in a lease-mode handler): `(sql) => queryRunner.query(sql)`,
   * `(sql) => tx.$executeRawUnsafe(sql)`, `(sql) => client.query(sql)`. The message is then sent
   * only if that transaction commits. It runs two statements: a check that the transaction is
   * open (a pool, or a client before BEGIN or after COMMIT, is refused with `IdempotencyOutboxError`), then the INSERT.
   * @default inside a transactional idempotent handler: the claim's transaction
   */
  readonly transaction?: TransactionStatements;
}

/**
 * The transactional outbox: `publish()` writes a message in the transaction of the work it
 * announces, so it exists if and only if that work committed, and the relay sends it afterwards,
 * at least once, with its stable id. Configure it with the module's `outbox` option.
 *
 * @example
 * ```ts
 * @Post('credits')
 * @IdempotentHandler()
 * async grant(@Body() body: GrantDto) {
 *   await this.credits.insert(body);
 *   await this.outbox.publish({ to: 'rabbitmq', address: 'credits', pattern: 'credit.granted', payload: body });
 * }
 * ```
 */
@Injectable()
export class Outbox {
  /** The ids of the messages written in each claim's transaction, which sends them with its COMMIT. */
  private readonly idsWritten = new WeakMap<ClaimConnection, Set<string>>();

  /** @internal Nest constructs it. */
  constructor(
    @Inject(OUTBOX_OPTIONS) private readonly options: ResolvedOutboxOptions | null,
    @Inject(CLAIM_STORAGE) private readonly storage: AsyncLocalStorage<ActiveClaim>,
    @Inject(STORE_DIALECT) private readonly store: DialectSource,
    @Optional() private readonly relay?: OutboxRelay,
  ) {}

  /**
   * Writes `message` in the current transaction: inside a transactional idempotent handler, the
   * claim's (with no round trip of its own: it travels with the COMMIT, and is dropped if the work
   * rolls back); elsewhere, `options.transaction`'s.
   * @returns the message's id.
   * @throws IdempotencyOutboxError when there is no transaction to write it in (or `transaction`
   *   runs its statements outside a transaction block), the message is not valid (a field
   *   `publish()` does not know, an unknown `to`, a payload that is not JSON, a refusal of its
   *   publisher), or the claim's transaction (or the table, for a message written in `transaction`)
   *   has a message of its id already; nothing is written.
   */
  async publish(message: OutboxMessage, options: OutboxPublishOptions = {}): Promise<string> {
    const outbox = this.options;
    if (outbox === null) {
      throw new IdempotencyOutboxError(outboxMessages.notConfigured());
    }
    refuseUnknownFields('the message', message, MESSAGE_FIELDS);
    refuseUnknownFields('the options', options, OPTION_FIELDS);
    const outgoing = this.toOutgoing(outbox, message);
    const { literal, outbox: dialect } = this.store.dialect;
    const nullable = (value: string | undefined) => (value === undefined ? 'NULL' : literal(value));
    const statements = dialect.insertOutboxStatements(outbox.tableName, {
      id: literal(outgoing.id),
      destination: literal(message.to),
      address: literal(outgoing.address),
      pattern: nullable(outgoing.pattern),
      headers: literal(JSON.stringify(outgoing.headers)),
      payload: literal(outgoing.payload),
      orderingKey: nullable(outgoing.orderingKey),
      availableAt: dialect.dueSql(dueOf(message)),
    });
    if (options.transaction !== undefined) {
      await this.writeInCallersTransaction(dialect, options.transaction, outbox.tableName, outgoing.id, statements);
      return outgoing.id;
    }
    const claim = this.storage.getStore();
    if (!claim?.transaction?.isOpen) {
      throw new IdempotencyOutboxError(outboxMessages.noTransaction(claim?.lease ? claim.consumer : undefined));
    }
    // The COMMIT would meet the table's unique id, after the handler answered: refused here instead.
    const written = this.idsWritten.get(claim.transaction) ?? new Set<string>();
    if (written.has(outgoing.id)) {
      throw new IdempotencyOutboxError(outboxMessages.idWritten(outgoing.id));
    }
    if (written.size === 0 && !dialect.notifies && this.relay !== undefined) {
      // No NOTIFY wakes this process's relay: the claim's commit does.
      const relay = this.relay;
      claim.afterCommit?.(() => relay.wake());
    }
    written.add(outgoing.id);
    this.idsWritten.set(claim.transaction, written);
    statements.forEach((statement) => claim.transaction!.defer(statement));
    return outgoing.id;
  }

  /**
   * Writes in the caller's transaction, once a statement PostgreSQL runs only in a transaction
   * block passed: a pool, or a client before BEGIN or after COMMIT, would commit the message on
   * its own, and it would be sent whatever became of the work. The check is a statement of its own
   * (no statement can tell from within whether it runs in a block, and a message of two statements
   * answers an array that Prisma's `$queryRawUnsafe` cannot read): one round trip more.
   */
  private async writeInCallersTransaction(dialect: OutboxDialect, transaction: TransactionStatements, table: string, id: string, statements: string[]): Promise<void> {
    try {
      await transaction(dialect.inTransactionCheckSql(table));
    } catch (error) {
      throw dialect.refusedOutsideTransaction(error) ? new IdempotencyOutboxError(outboxMessages.notInTransaction(), { cause: error }) : error;
    }
    try {
      for (const statement of statements) {
        await transaction(statement);
      }
    } catch (error) {
      throw dialect.idTaken(error, table) ? new IdempotencyOutboxError(outboxMessages.idTaken(id), { cause: error }) : error;
    }
  }

  private toOutgoing(outbox: ResolvedOutboxOptions, message: OutboxMessage): OutgoingMessage {
    const publisher = outbox.publishers.get(message.to);
    if (publisher === undefined) {
      throw new IdempotencyOutboxError(outboxMessages.unknownDestination(message.to, [...outbox.publishers.keys()]));
    }
    const outgoing: OutgoingMessage = {
      id: message.id === undefined ? randomUUID() : checkedText('id', message.id),
      address: checkedText('address', message.address, 1024),
      pattern: message.pattern === undefined ? undefined : checkedText('pattern', message.pattern, 1024),
      headers: checkedHeaders(message.headers ?? {}),
      payload: payloadText(message.payload),
      orderingKey: message.orderingKey === undefined ? undefined : checkedText('orderingKey', message.orderingKey),
    };
    const refusal = publisher.refuse?.(outgoing);
    if (refusal !== undefined) {
      throw new IdempotencyOutboxError(outboxMessages.refused(message.to, refusal));
    }
    return outgoing;
  }
}

/** Refuses fields `publish()` does not know (a misspelt `orderingKey`, an option of another library): ignored, they would change nothing silently. */
function refuseUnknownFields(what: string, given: object, known: ReadonlySet<string>): void {
  const unknown = typeof given === 'object' && given !== null ? Object.keys(given).filter((field) => !known.has(field)) : [];
  if (unknown.length > 0) {
    throw new IdempotencyOutboxError(outboxMessages.unknownFields(what, unknown, [...known]));
  }
}

/** When the message is due: as soon as its transaction committed, after `delay`, or at `availableAt`. */
function dueOf({ delay, availableAt }: OutboxMessage): OutboxDue {
  if (delay !== undefined && availableAt !== undefined) {
    throw new IdempotencyOutboxError(outboxMessages.delayAndAvailableAt());
  }
  if (availableAt !== undefined) {
    if (!(availableAt instanceof Date) || Number.isNaN(availableAt.getTime())) {
      throw new IdempotencyOutboxError(outboxMessages.invalidField('availableAt', 'a valid Date', String(availableAt)));
    }
    return { at: availableAt };
  }
  if (delay === undefined) {
    return null;
  }
  try {
    return { delayMs: toMilliseconds('delay', delay, MAX_RETENTION_MS) };
  } catch (error) {
    throw new IdempotencyOutboxError(`Outbox.publish(): ${(error as Error).message}`);
  }
}

/** A printable text of 1 to `max` characters (the id is the downstream key: checked as a key is). */
function checkedText(field: string, value: unknown, max = 255): string {
  // eslint-disable-next-line no-control-regex
  if (typeof value !== 'string' || value === '' || [...value].length > max || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new IdempotencyOutboxError(outboxMessages.invalidField(field, `a printable text of 1 to ${max} characters`, value));
  }
  return value;
}

function checkedHeaders(headers: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  if (typeof headers !== 'object' || headers === null || Object.values(headers).some((value) => typeof value !== 'string')) {
    throw new IdempotencyOutboxError(outboxMessages.invalidField('headers', 'an object of texts', headers));
  }
  return headers;
}

function payloadText(payload: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(payload);
  } catch (error) {
    throw new IdempotencyOutboxError(outboxMessages.notJson((error as Error).message));
  }
  if (text === undefined) {
    throw new IdempotencyOutboxError(outboxMessages.notJson(`${typeof payload} is not JSON`));
  }
  return text;
}
