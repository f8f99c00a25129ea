import { Injectable, Optional } from '@nestjs/common';
import { IdempotencyAdminError } from '../errors/idempotency.errors.js';
import { DEFAULT_OUTBOX_TABLE_NAME } from '../idempotency.constants.js';
import { StoreHandle } from '../store/store.handle.js';
import { OutboxRelay } from '../outbox/outbox-relay.js';
import { adminMessages } from './admin.messages.js';
import { audit, listLimit, requireReason } from './admin-audit.js';

/** `deadLetters()`'s options: filters, each optional, that a dead letter must all meet, and paging. */
export interface AdminOutboxListOptions {
  /** How many, oldest first, at most 1000. @default 50 */
  readonly limit?: number;
  /** Only the dead letters of this ordering key. */
  readonly orderingKey?: string;
  /** Only those of this publisher (their `to`). */
  readonly destination?: string;
  /** Only those to this address (a queue, a routing key, a subject). */
  readonly address?: string;
  /** Only those parked before this moment (to find the old ones). */
  readonly deadLetteredBefore?: Date;
  /** The next page: the dead letters after this id, the last of the previous page (an id that is no dead letter gives an empty page). */
  readonly after?: string;
  readonly actor?: string;
}

/** `deadLetter()`'s options. */
export interface AdminOutboxLookupOptions {
  /** The message's id. */
  readonly id: string;
  readonly actor?: string;
}

/** `requeue()` and `discard()`'s options. */
export interface AdminOutboxActionOptions {
  /** The ids of the dead letters; ids of messages that are not dead letters are left as they are. */
  readonly ids: readonly string[];
  /** Why: required, logged in the audit line. */
  readonly reason: string;
  readonly actor?: string;
}

/** An outbox message parked as a dead letter. */
export interface AdminOutboxMessage {
  readonly id: string;
  /** The name of its publisher (`to`). */
  readonly destination: string;
  readonly address: string;
  readonly pattern: string | null;
  readonly orderingKey: string | null;
  readonly headers: Readonly<Record<string, string>>;
  /** The payload as the JSON text it is sent as. */
  readonly payload: string;
  readonly attempts: number;
  /** The error of its last publish. */
  readonly lastError: string | null;
  readonly createdAt: Date;
  readonly deadLetteredAt: Date;
}

interface DeadLetterRow {
  id: string;
  destination: string;
  address: string;
  pattern: string | null;
  ordering_key: string | null;
  headers: Record<string, string>;
  payload: string;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  dead_lettered_at: Date;
}

/**
 * For operators, on the outbox's dead letters (the messages that failed `outbox.relay.maxAttempts`
 * publishes, or that a publisher refused for good): list and read them, then requeue them once
 * the cause is fixed, or discard them. It works on the outbox table (`outbox.tableName`, or
 * `outbox_messages`), also from a script through `IdempotencyAdminModule`. Like `IdempotencyAdmin`
 * it has no HTTP routes, and every call is logged (context `Idempotency`) with its actor and reason.
 *
 * @example
 * ```ts
 * const admin = app.get(OutboxAdmin);
 * const letters = await admin.deadLetters({ destination: 'payments', actor: 'jane' });
 * await admin.requeue({ ids: letters.map((letter) => letter.id), reason: 'broker fixed, INC-42', actor: 'jane' });
 * ```
 */
@Injectable()
export class OutboxAdmin {
  private readonly table: string;

  /** @internal Nest constructs it. */
  constructor(
    private readonly store: StoreHandle,
    @Optional() private readonly relay?: OutboxRelay,
  ) {
    this.table = store.outboxTable ?? DEFAULT_OUTBOX_TABLE_NAME;
  }

  /** The dead letters, oldest first, that meet every filter given. Each holds back the later messages of its ordering key. */
  async deadLetters(options: AdminOutboxListOptions = {}): Promise<AdminOutboxMessage[]> {
    const limit = listLimit('OutboxAdmin.deadLetters', options.limit, this.table);
    const { orderingKey, destination, address, deadLetteredBefore, after } = options;
    for (const [name, value] of Object.entries({ orderingKey, destination, address, after })) {
      if (value !== undefined && typeof value !== 'string') {
        throw new IdempotencyAdminError(adminMessages.adminOutboxFilter(name, 'a text', value), this.table, '');
      }
    }
    if (deadLetteredBefore !== undefined && (!(deadLetteredBefore instanceof Date) || Number.isNaN(deadLetteredBefore.getTime()))) {
      throw new IdempotencyAdminError(adminMessages.adminOutboxFilter('deadLetteredBefore', 'a valid Date', deadLetteredBefore), this.table, '');
    }
    const filters = [orderingKey, destination, address, deadLetteredBefore, after].map((value) => value ?? null);
    const { rows } = await this.store.query<DeadLetterRow>(this.store.dialect.outbox.outboxDeadLettersSql(this.table), [limit, ...filters]);
    audit('deadLetters', this.table, undefined, options.actor, undefined, `${rows.length} dead letters`);
    return rows.map((row) => this.fromDeadLetterRow(row));
  }

  /** The dead letter of id `id`; null when no dead letter has that id (none, or a message not parked). */
  async deadLetter(options: AdminOutboxLookupOptions): Promise<AdminOutboxMessage | null> {
    if (typeof options?.id !== 'string') {
      throw new IdempotencyAdminError(adminMessages.adminOutboxFilter('id', 'a text', options?.id), this.table, '');
    }
    const {
      rows: [row],
    } = await this.store.query<DeadLetterRow>(this.store.dialect.outbox.outboxDeadLetterSql(this.table), [options.id]);
    audit('deadLetter', this.table, options.id, options.actor, undefined, row ? 'a dead letter' : 'no dead letter');
    return row ? this.fromDeadLetterRow(row) : null;
  }

  /**
   * Sends dead letters again: their attempts start over, and the relays are woken (on MariaDB, the relay of this process; the others at their next poll).
   * @returns the ids requeued (those of `ids` that were dead letters).
   * @throws IdempotencyAdminError without a `reason`.
   */
  requeue(options: AdminOutboxActionOptions): Promise<string[]> {
    return this.act(
      'requeue',
      options,
      async (ids) => {
        const requeued = await this.store.dialect.outbox.requeue(this.store.query, this.table, ids);
        // Where the database wakes no relay (MariaDB), this process's relay is woken; the others find them at their next poll.
        if (requeued.length > 0 && !this.store.dialect.outbox.notifies) {
          this.relay?.wake();
        }
        return requeued;
      },
      'requeued',
    );
  }

  /**
   * Deletes dead letters for good: they are never sent, and the later messages of their ordering keys go on.
   * @returns the ids discarded (those of `ids` that were dead letters).
   * @throws IdempotencyAdminError without a `reason`.
   */
  discard(options: AdminOutboxActionOptions): Promise<string[]> {
    return this.act('discard', options, (ids) => this.store.dialect.outbox.discard(this.store.query, this.table, ids), 'discarded');
  }

  private async act(action: string, options: AdminOutboxActionOptions, perform: (ids: readonly string[]) => Promise<string[]>, done: string): Promise<string[]> {
    const reason = requireReason(`OutboxAdmin.${action}`, options.reason, this.table, '');
    if (!Array.isArray(options.ids) || options.ids.some((id) => typeof id !== 'string')) {
      throw new IdempotencyAdminError(adminMessages.adminIdsMissing(`OutboxAdmin.${action}`), this.table, '');
    }
    const ids = await perform(options.ids);
    audit(action, this.table, undefined, options.actor, reason, `${done} ${ids.length} of ${options.ids.length}${ids.length > 0 ? `: ${ids.join(', ')}` : ''}`);
    return ids;
  }

  private fromDeadLetterRow(row: DeadLetterRow): AdminOutboxMessage {
    return {
      id: row.id,
      destination: row.destination,
      address: row.address,
      pattern: row.pattern,
      orderingKey: row.ordering_key,
      headers: this.store.dialect.outbox.headersOf(row.headers),
      payload: row.payload,
      attempts: row.attempts,
      lastError: row.last_error,
      createdAt: row.created_at,
      deadLetteredAt: row.dead_lettered_at,
    };
  }
}
