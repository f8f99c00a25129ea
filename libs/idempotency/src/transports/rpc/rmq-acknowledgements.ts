import { type BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import type { RmqContext } from '@nestjs/microservices';
import { messages } from '../../idempotency.messages.js';

/** How one idempotent handler wants the message it handled to be settled with the broker. */
export type Verdict =
  | { readonly kind: 'ack' }
  | { readonly kind: 'retry'; readonly attemptKey: string; readonly maxAttempts: number; readonly reason: string }
  | { readonly kind: 'dead-letter'; readonly reason: string };

interface AmqpMessage {
  readonly properties: { readonly headers?: Record<string, unknown> };
}

interface AmqpChannel {
  ack(message: AmqpMessage): void;
  nack(message: AmqpMessage, allUpTo: boolean, requeue: boolean): void;
}

interface OpenMessage {
  handlers: number;
  readonly verdicts: Verdict[];
}

/** Failed attempts remembered per message; the oldest are forgotten beyond this many. */
const MAX_REMEMBERED_FAILURES = 10_000;

/** How long shutdown waits for handlers in flight to settle their messages before the channel closes. */
const SHUTDOWN_DRAIN_TIMEOUT_MS = 10_000;

/**
 * Acknowledges each RabbitMQ message exactly once, after every idempotent handler of its pattern
 * has settled (Nest runs all `@EventPattern` handlers of a pattern on the same delivery): ack
 * when all committed or found a duplicate, nack with requeue when one failed, nack without
 * requeue (dead-letter) when one can never succeed or the attempts are spent. On shutdown it
 * lets the handlers in flight finish and settle before Nest closes the channel, so a message
 * already processed is acked rather than redelivered.
 */
@Injectable()
export class RmqAcknowledgements implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private readonly open = new WeakMap<object, OpenMessage>();
  private readonly failedAttempts = new Map<string, number>();
  private unsettledHandlers = 0;
  private onDrained: (() => void) | undefined;

  async beforeApplicationShutdown(): Promise<void> {
    if (this.unsettledHandlers === 0) {
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => (this.onDrained = resolve)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_DRAIN_TIMEOUT_MS))),
    ]);
    clearTimeout(timer);
  }

  /** Registers one handler of the message; call the returned function once with its verdict. */
  join(context: RmqContext): (verdict: Verdict) => void {
    const message = context.getMessage() as AmqpMessage;
    let entry = this.open.get(message);
    if (!entry) {
      entry = { handlers: 0, verdicts: [] };
      this.open.set(message, entry);
    }
    const joined = entry;
    joined.handlers++;
    this.unsettledHandlers++;
    let settled = false;
    return (verdict) => {
      if (settled) {
        return;
      }
      settled = true;
      joined.verdicts.push(verdict);
      joined.handlers--;
      // The other handlers of a pattern join within the same turn of the event loop as the first.
      setImmediate(() => this.settleWhenComplete(context, message, joined));
    };
  }

  private settleWhenComplete(context: RmqContext, message: AmqpMessage, entry: OpenMessage): void {
    if (entry.handlers > 0 || this.open.get(message) !== entry) {
      return;
    }
    this.open.delete(message);
    try {
      this.settle(context, message, entry.verdicts);
    } catch (error) {
      // The channel closed under us: the broker redelivers the message, and the claim answers it.
      this.logger.warn(messages.settleFailed(context.getPattern(), (error as Error).message));
    }
    this.unsettledHandlers -= entry.verdicts.length;
    if (this.unsettledHandlers === 0) {
      this.onDrained?.();
    }
  }

  private settle(context: RmqContext, message: AmqpMessage, verdicts: Verdict[]): void {
    const channel = context.getChannelRef() as AmqpChannel;
    const deadLetter = verdicts.find((verdict) => verdict.kind === 'dead-letter');
    const retry = verdicts.find((verdict) => verdict.kind === 'retry');
    if (deadLetter) {
      this.logger.error(messages.deadLettered(context.getPattern(), deadLetter.reason));
      channel.nack(message, false, false);
    } else if (retry) {
      const attempt = this.countFailure(retry.attemptKey, message);
      if (attempt >= retry.maxAttempts) {
        this.failedAttempts.delete(retry.attemptKey);
        this.logger.error(messages.deadLettered(context.getPattern(), messages.attemptsExhausted(attempt, retry.reason)));
        channel.nack(message, false, false);
      } else {
        this.logger.warn(messages.requeued(context.getPattern(), attempt, retry.maxAttempts, retry.reason));
        channel.nack(message, false, true);
      }
    } else {
      channel.ack(message);
    }
  }

  /** This failure's number: the broker's delivery count where the queue keeps one, else ours. */
  private countFailure(attemptKey: string, message: AmqpMessage): number {
    const counted = (this.failedAttempts.get(attemptKey) ?? 0) + 1;
    this.failedAttempts.delete(attemptKey);
    this.failedAttempts.set(attemptKey, counted);
    if (this.failedAttempts.size > MAX_REMEMBERED_FAILURES) {
      this.failedAttempts.delete(this.failedAttempts.keys().next().value as string);
    }
    const deliveryCount = Number(message.properties.headers?.['x-delivery-count'] ?? 0);
    return Math.max(counted, deliveryCount + 1);
  }
}
