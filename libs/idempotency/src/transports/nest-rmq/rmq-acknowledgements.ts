import { type BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import type { RmqContext } from '@nestjs/microservices';
import { AmqpFailureCount } from '../amqp-failure-count.js';
import { failureOutcomes, transportMessages } from '../transport.messages.js';
import type { FailureCause, Verdict } from '../message-transport.js';
import { RMQ_TRANSPORT_NAME } from './rmq.constants.js';
import { within } from '../../duration/within.js';

/** What the module reads of an AMQP message. */
export interface AmqpMessage {
  readonly properties: { readonly messageId?: unknown; readonly headers?: Record<string, unknown> };
}

interface AmqpChannel {
  ack(message: AmqpMessage): void;
  nack(message: AmqpMessage, allUpTo: boolean, requeue: boolean): void;
}

interface OpenMessage {
  /** Idempotent handlers of the message's pattern; 0 when unknown (a wildcard pattern). */
  readonly expected: number;
  joined: number;
  readonly verdicts: Verdict[];
}

/** How long shutdown waits for handlers in flight to settle their messages before the channel closes. */
const SHUTDOWN_DRAIN_TIMEOUT_MS = 10_000;

/**
 * Acknowledges each RabbitMQ message exactly once, after every idempotent handler of its pattern
 * has settled, however long their guards, pipes and interceptors take (Nest runs all the
 * `@EventPattern` handlers of a pattern on one delivery): ack when all committed or found a
 * duplicate; requeue after a delay that doubles with each failure when one failed; nack without
 * requeue (dead-letter) when one can never succeed or the attempts are spent. On shutdown it lets
 * the handlers in flight settle before Nest closes the channel, so a message already processed is
 * acked rather than redelivered, and drops the delayed retries: their messages stay
 * unacknowledged, and the channel's close returns each to the queue once. (A requeue while this
 * consumer is still subscribed would hand them straight back to it, to be returned again by the
 * close: two deliveries, which a quorum queue counts in `x-delivery-count`, for one attempt.)
 */
@Injectable()
export class RmqAcknowledgements implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private readonly open = new WeakMap<object, OpenMessage>();
  private readonly failures = new AmqpFailureCount();
  private readonly delayedRequeues = new Set<NodeJS.Timeout>();
  private unsettledHandlers = 0;
  private onDrained: (() => void) | undefined;

  async beforeApplicationShutdown(): Promise<void> {
    if (this.unsettledHandlers > 0) {
      await within(new Promise<void>((resolve) => (this.onDrained = resolve)), SHUTDOWN_DRAIN_TIMEOUT_MS);
    }
    for (const timer of this.delayedRequeues) {
      clearTimeout(timer);
    }
    this.delayedRequeues.clear();
  }

  /**
   * Registers one handler of the message; call the returned function once with its verdict.
   * @param expectedHandlers The idempotent handlers of the message's pattern; 0 when unknown.
   */
  join(context: RmqContext, expectedHandlers: number): (verdict: Verdict) => void {
    const message = context.getMessage() as AmqpMessage;
    let entry = this.open.get(message);
    if (!entry) {
      entry = { expected: expectedHandlers, joined: 0, verdicts: [] };
      this.open.set(message, entry);
    }
    const joined = entry;
    joined.joined++;
    this.unsettledHandlers++;
    let settled = false;
    return (verdict) => {
      if (settled) {
        return;
      }
      settled = true;
      joined.verdicts.push(verdict);
      if (joined.expected > 0) {
        this.settleWhenComplete(context, message, joined);
      } else {
        // Unknown count: the other handlers of the pattern joined within the same turn as the first.
        setImmediate(() => this.settleWhenComplete(context, message, joined));
      }
    };
  }

  private settleWhenComplete(context: RmqContext, message: AmqpMessage, entry: OpenMessage): void {
    const complete = entry.expected > 0 ? entry.verdicts.length >= entry.expected : entry.verdicts.length === entry.joined;
    if (!complete || this.open.get(message) !== entry) {
      return;
    }
    this.open.delete(message);
    this.guarded(context, () => this.settle(context, message, entry.verdicts));
    this.unsettledHandlers -= entry.verdicts.length;
    if (this.unsettledHandlers === 0) {
      this.onDrained?.();
    }
  }

  private settle(context: RmqContext, message: AmqpMessage, verdicts: Verdict[]): void {
    const channel = context.getChannelRef() as AmqpChannel;
    const deadLetter = verdicts.find((verdict) => verdict.kind === 'dead-letter');
    const retry = verdicts.find((verdict) => verdict.kind === 'retry');
    const failed = (verdict: FailureCause, outcome: string) =>
      transportMessages.deliveryFailed({ transport: RMQ_TRANSPORT_NAME, messageId: message.properties.messageId, ...verdict, outcome, cause: verdict.reason });
    if (deadLetter) {
      this.logger.error(failed(deadLetter, failureOutcomes.deadLettered()));
      channel.nack(message, false, false);
    } else if (retry) {
      const failure = this.failures.fail(retry, message);
      if (failure.exhausted) {
        this.logger.error(failed(retry, failureOutcomes.deadLettered(failure.attempt)));
        channel.nack(message, false, false);
      } else {
        this.logger.warn(failed(retry, failureOutcomes.requeued(failure.attempt, retry.maxAttempts, failure.delayMs)));
        this.requeueAfter(failure.delayMs, () => this.guarded(context, () => channel.nack(message, false, true)));
      }
    } else {
      channel.ack(message);
    }
  }

  /** Requeues after `delayMs`; the message stays unacknowledged meanwhile, so a crash redelivers it. */
  private requeueAfter(delayMs: number, requeue: () => void): void {
    const timer = setTimeout(() => {
      this.delayedRequeues.delete(timer);
      requeue();
    }, delayMs);
    this.delayedRequeues.add(timer);
  }

  /** Runs a settlement; a channel closed under us is no failure: the broker redelivers, and the claim answers. */
  private guarded(context: RmqContext, settle: () => void): void {
    try {
      settle();
    } catch (error) {
      this.logger.warn(transportMessages.settleFailed(context.getPattern(), (error as Error).message));
    }
  }
}
