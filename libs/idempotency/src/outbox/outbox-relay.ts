import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { inspect } from 'node:util';
import type { ClaimConnection } from '../data-layers/data-layer.js';
import { StoreHandle } from '../store/store.handle.js';
import { within } from '../duration/within.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import { IdempotencyTracing } from '../tracing/idempotency-tracing.js';
import { OutboxSchemaCheck } from './outbox-schema.check.js';
import type { OutgoingMessage, PublishAttempt } from './outbox-publisher.js';
import { IdempotencyOutboxError, IdempotencyPublishRefusedError } from '../errors/idempotency.errors.js';
import { OUTBOX_OPTIONS, type ResolvedOutboxOptions, type ResolvedRelayOptions } from './outbox.options.js';
import { outboxMessages } from './outbox.messages.js';
import type { FailedPublish, OutboxRow } from '../dialects/store-dialect.js';

/** What one batch of `OutboxRelay.runOnce()` did with its messages. */
export interface OutboxRelayRun {
  /** Messages the batch took (due, and not held back by an earlier one of their ordering key). */
  readonly taken: number;
  /** Confirmed by their broker and marked dispatched. */
  readonly published: number;
  /** Failed, to be retried after their delay. */
  readonly failed: number;
  /** Failed for the last time (or refused for good) and parked as dead letters. */
  readonly deadLettered: number;
}

/** `OutboxRelay.stats()`: what this process's relay is doing now. */
export interface OutboxRelayStats {
  /** Whether its own loop runs (false with `relay: { autoStart: false }`, and once the application shuts down). */
  readonly running: boolean;
  /** Publishes waiting for their broker's confirmation, of its loop's batches and of `runOnce()`. */
  readonly publishesInFlight: number;
  /** When the earliest retry it scheduled is due; null when none is. */
  readonly nextRetryAt: Date | null;
}

/** Why a publish failed; `permanent`: the publisher refused the message for good (a dead letter at once). */
interface PublishFailure {
  readonly error: string;
  readonly permanent: boolean;
}

/** How the relay's connections are named in the errors of the data layer. */
const RELAY_CLAIMANT = { consumer: 'the outbox relay', key: '' };

/**
 * Sends what `Outbox.publish()` wrote once it committed, at least once, in the order it was
 * written. Each batch is one transaction on a connection of the module's data layer: it locks
 * due messages (`FOR UPDATE SKIP LOCKED`, so relays of several processes share the table), hands
 * each to its publisher, waits for the broker's confirmations, and marks each message dispatched
 * or failed (with its next attempt after a doubling delay, when this relay looks again; a dead
 * letter after `maxAttempts`, or at once when the publisher refused it with
 * `IdempotencyPublishRefusedError`) in
 * the COMMIT. A relay that dies mid-batch holds nothing: PostgreSQL rolls its transaction back and
 * the messages are sent again, with the same ids; a batch whose connection failed is logged and
 * taken again after `pollInterval`. It wakes on NOTIFY from each commit that wrote messages, polls
 * every `pollInterval` besides, and goes on at once after a batch that was full or sent a message
 * of an ordering key (whose next one may be due).
 *
 * Inject it for `runOnce()` (a test that publishes and then wants the batch sent, a cron-style
 * worker with `relay: { autoStart: false }`) and `stats()`.
 */
@Injectable()
export class OutboxRelay implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private stopping = false;
  private running: Promise<void>[] = [];
  /** Set by a wake-up that came while a batch ran: the next batch starts without waiting. */
  private woken = false;
  /** The pauses under way, each ended early by `wake()`. */
  private readonly pauses = new Set<() => void>();
  private endListening: (() => void) | undefined;
  /**
   * When the retries this relay scheduled are due (timestamps), so that it looks at each rather
   * than at the next poll. One per batch that failed messages, dropped by the first batch that
   * looks after it: a batch may take a retry before its time here (the database's clock counts
   * microseconds), and the batch's own failures must not be lost to the earlier time.
   */
  private retriesDue: number[] = [];
  /** Publishes waiting for the broker. */
  private publishesInFlight = 0;

  /** @internal Nest constructs it. */
  constructor(
    @Inject(OUTBOX_OPTIONS) private readonly outbox: ResolvedOutboxOptions | null,
    private readonly store: StoreHandle,
    private readonly metrics: IdempotencyMetricsService,
    private readonly schema: OutboxSchemaCheck,
    private readonly tracing: IdempotencyTracing,
  ) {}

  /**
   * Takes one batch of due messages and publishes it now, in this process, beside the relay's own
   * loop if it runs (several batches share the table safely). A batch holds at most one message of
   * each ordering key, the next one in its order: to drain, call it until it answers `taken: 0`.
   * @returns what became of the batch's messages: all zero when none was due.
   * @throws IdempotencyOutboxError when the module has no `outbox`, or `relay: false`.
   */
  async runOnce(): Promise<OutboxRelayRun> {
    const relay = this.outbox?.relay;
    if (!relay) {
      throw new IdempotencyOutboxError(outboxMessages.noRelay());
    }
    await this.schema.passed();
    return (await this.batch(relay)).run;
  }

  /** What this process's relay is doing now. */
  stats(): OutboxRelayStats {
    return {
      running: this.running.length > 0 && !this.stopping,
      publishesInFlight: this.publishesInFlight,
      nextRetryAt: this.retriesDue.length === 0 ? null : new Date(Math.min(...this.retriesDue)),
    };
  }

  /** Starts the relay's loop (its poll, and LISTEN) unless `relay.autoStart` is false. */
  onApplicationBootstrap(): void {
    const relay = this.outbox?.relay;
    if (relay?.autoStart) {
      this.running = [this.relay(relay), ...(relay.listen && this.store.dialect.outbox.notifies ? [this.listen(relay)] : [])];
    }
  }

  /** The batch in progress finishes (or rolls back) and the publishers close before the connections do. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.wake();
    this.endListening?.();
    await Promise.all(this.running);
    await Promise.all([...(this.outbox?.publishers.values() ?? [])].map((publisher) => publisher.close?.().catch(() => undefined)));
  }

  /** Starts the next batch now, or as soon as the running one ended: on a commit that wrote messages, where no NOTIFY tells the relay. @internal */
  wake(): void {
    this.woken = true;
    for (const endPause of this.pauses) {
      endPause();
    }
  }

  private async relay(relay: ResolvedRelayOptions): Promise<void> {
    // Nest runs the bootstrap hooks together: a table the check refuses stops the application instead.
    if (!(await this.schema.passed())) {
      return;
    }
    const wokenBy = this.store.dialect.outbox.notifies ? (relay.listen ? 'NOTIFY' : null) : 'its process';
    this.logger.log(outboxMessages.relayStarted(this.table, relay.batchSize, wokenBy, relay.pollIntervalMs));
    while (!this.stopping) {
      this.woken = false;
      let more = false;
      let failed = false;
      try {
        more = (await this.batch(relay)).more;
      } catch (error) {
        failed = true;
        this.logger.warn(outboxMessages.relayFailed(this.table, (error as Error).message));
      }
      if (!more && !this.woken && !this.stopping) {
        // After a failed batch, the retries it did not take wait for the poll too: looking at once would hammer a database that is down.
        const nextRetry = failed || this.retriesDue.length === 0 ? Infinity : Math.min(...this.retriesDue) - Date.now();
        await this.pause(Math.min(relay.pollIntervalMs, Math.max(0, nextRetry)));
      }
    }
  }

  /** Publishes one batch; `more` when more may be due: it was full, or it sent a message of an ordering key. */
  private async batch(relay: ResolvedRelayOptions): Promise<{ more: boolean; run: OutboxRelayRun }> {
    const connection = await this.store.connect(RELAY_CLAIMANT);
    try {
      const outbox = this.store.dialect.outbox;
      const lookedAt = Date.now();
      // READ COMMITTED: a batch takes no gap locks that would hold up the writers (MariaDB's default level would).
      const [taken] = await connection.begin('READ COMMITTED', [outbox.takeBatchSql(this.table, relay.batchSize, relay.deadLetterHoldsKey)]);
      // The retries due by then were due in the database too: this batch took them, or another relay holds them.
      this.retriesDue = this.retriesDue.filter((due) => due > lookedAt);
      const rows = (taken.rows as OutboxRow[]).map((row) => ({ ...row, headers: outbox.headersOf(row.headers) }));
      if (rows.length === 0) {
        await connection.rollback();
        return { more: false, run: { taken: 0, published: 0, failed: 0, deadLettered: 0 } };
      }
      const failures = await this.publishAll(rows, relay);
      const dead = await this.settle(connection, relay, rows, failures);
      // A batch takes one message per ordering key: the next one of a key just sent (or whose dead letter lets it go) may be due now.
      const keyMoved = (row: OutboxRow, index: number) => failures[index] === undefined || (!relay.deadLetterHoldsKey && dead.has(row.seq));
      const failed = failures.filter((failure) => failure !== undefined).length;
      return {
        more: rows.length === relay.batchSize || rows.some((row, index) => row.ordering_key !== null && keyMoved(row, index)),
        run: { taken: rows.length, published: rows.length - failed, failed: failed - dead.size, deadLettered: dead.size },
      };
    } finally {
      await connection.close();
    }
  }

  /** Publishes the batch's messages, `concurrency` at a time; each result in its message's place. */
  private async publishAll(rows: OutboxRow[], relay: ResolvedRelayOptions): Promise<(PublishFailure | undefined)[]> {
    const results: (PublishFailure | undefined)[] = new Array(rows.length);
    let next = 0;
    const publishing = async () => {
      while (next < rows.length) {
        const index = next++;
        this.publishesInFlight++;
        try {
          results[index] = await this.publish(rows[index], relay);
        } finally {
          this.publishesInFlight--;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(relay.concurrency, rows.length) }, publishing));
    return results;
  }

  /** Undefined when the broker confirmed the message, else why it did not. */
  private async publish(row: OutboxRow, relay: ResolvedRelayOptions): Promise<PublishFailure | undefined> {
    const publisher = this.outbox!.publishers.get(row.destination);
    if (publisher === undefined) {
      return { error: outboxMessages.unknownDestination(row.destination, [...this.outbox!.publishers.keys()]), permanent: false };
    }
    const message: OutgoingMessage = {
      id: row.id,
      address: row.address,
      pattern: row.pattern ?? undefined,
      headers: row.headers,
      payload: row.payload,
      orderingKey: row.ordering_key ?? undefined,
    };
    const abort = new AbortController();
    const attempt: PublishAttempt = { attempt: row.attempts + 1, lastError: row.last_error ?? undefined, timeoutMs: relay.publishTimeoutMs, signal: abort.signal };
    try {
      const confirmed = await within(publisher.publish(message, attempt).then(() => true), relay.publishTimeoutMs);
      if (confirmed) {
        return undefined;
      }
      const error = outboxMessages.publishTimedOut(relay.publishTimeoutMs);
      abort.abort(new Error(error));
      return { error, permanent: false };
    } catch (error) {
      // A publisher may reject with anything: a string, an object without a prototype.
      const text = error instanceof Error ? error.message : typeof error === 'string' ? error : inspect(error);
      return { error: text, permanent: error instanceof IdempotencyPublishRefusedError };
    }
  }

  /** Marks each message of the batch dispatched or failed, in its COMMIT; answers the seqs of those parked as dead letters. */
  private async settle(connection: ClaimConnection, relay: ResolvedRelayOptions, rows: OutboxRow[], results: (PublishFailure | undefined)[]): Promise<Set<string>> {
    const published: OutboxRow[] = [];
    const failures: FailedPublish[] = [];
    const failedDestinations: string[] = [];
    rows.forEach((row, index) => {
      const failure = results[index];
      if (failure === undefined) {
        published.push(row);
        return;
      }
      const { error, permanent } = failure;
      const attempt = row.attempts + 1;
      const dead = permanent || attempt >= relay.maxAttempts;
      const delayMs = Math.min(relay.maxRetryDelayMs, relay.retryDelayMs * 2 ** (attempt - 1));
      failures.push({ seq: row.seq, error: connection.literal(error), delayMs, dead });
      failedDestinations.push(row.destination);
      this.logger.warn(dead ? outboxMessages.deadLettered(this.table, row.id, attempt, error, relay.deadLetterHoldsKey ? row.ordering_key : null) : outboxMessages.publishFailed(row.id, row.destination, attempt, delayMs, error));
    });
    await connection.commit([
      ...(published.length > 0 ? [this.store.dialect.outbox.markDispatchedSql(this.table, published.map((row) => row.seq))] : []),
      ...(failures.length > 0 ? [this.store.dialect.outbox.markFailedSql(this.table, failures)] : []),
    ]);
    this.metrics.recordOutboxBatch({
      size: rows.length,
      published: published.map((row) => row.destination),
      failed: failedDestinations,
      deadLettered: failures.filter((failure) => failure.dead).length,
    });
    this.announce(rows, results, failures);
    const retries = failures.filter((failure) => !failure.dead);
    if (retries.length > 0) {
      // Their next attempt is the server's NOW() plus the delay, in microseconds; Date.now() counts whole milliseconds, one more covers the part it dropped.
      this.retriesDue.push(Date.now() + 1 + Math.min(...retries.map((failure) => failure.delayMs)));
    }
    return new Set(failures.filter((failure) => failure.dead).map((failure) => failure.seq));
  }

  /** Tells the outbox channel's subscribers what became of each message of a committed batch. */
  private announce(rows: OutboxRow[], results: (PublishFailure | undefined)[], failures: FailedPublish[]): void {
    const channel = this.tracing.channels.outbox;
    if (!channel.hasSubscribers) {
      return;
    }
    const failed = new Map(failures.map((failure) => [failure.seq, failure]));
    rows.forEach((row, index) => {
      const message = { id: row.id, destination: row.destination, address: row.address, attempt: row.attempts + 1 };
      const failure = failed.get(row.seq);
      if (failure === undefined) {
        channel.publish({ event: 'published', ...message });
      } else {
        const error = results[index]!.error;
        channel.publish(failure.dead ? { event: 'dead-lettered', ...message, error } : { event: 'failed', ...message, error, retryInMs: failure.delayMs });
      }
    });
  }

  /** Keeps one connection LISTENing on the table's channel, and listens again after it was lost. */
  private async listen(relay: ResolvedRelayOptions): Promise<void> {
    if (!(await this.schema.passed())) {
      return;
    }
    while (!this.stopping) {
      let connection: ClaimConnection | undefined;
      try {
        connection = await this.store.connect(RELAY_CLAIMANT);
        let lost!: (error?: Error) => void;
        const ended = new Promise<Error | undefined>((resolve) => (lost = resolve));
        this.endListening = () => lost();
        // A shutdown that began while this connection was being opened found nothing to end.
        if (this.stopping) {
          lost();
        }
        const unlisten = await connection.listen!(this.table, () => this.wake(), lost);
        // What committed before the LISTEN took effect woke no one.
        this.wake();
        const error = await ended;
        if (error === undefined) {
          await unlisten();
          return;
        }
        this.logger.warn(outboxMessages.listenLost(this.table, error.message));
      } catch (error) {
        this.logger.warn(outboxMessages.listenLost(this.table, (error as Error).message));
      } finally {
        this.endListening = undefined;
        await connection?.close().catch(() => undefined);
      }
      await this.pause(relay.pollIntervalMs);
    }
  }

  /** Waits `ms`, or until `wake()`; not at all once the shutdown began (its wake-up may have come before). */
  private pause(ms: number): Promise<void> {
    if (this.stopping) {
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const end = () => {
        clearTimeout(timer);
        this.pauses.delete(end);
        resolve();
      };
      const timer = setTimeout(end, ms);
      this.pauses.add(end);
    });
  }

  private get table(): string {
    return this.store.outboxTable!;
  }
}
