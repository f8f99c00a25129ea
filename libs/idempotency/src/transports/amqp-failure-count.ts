import { retryDelayMs } from './transport.constants.js';
import type { Verdict } from './message-transport.js';

/** What the failure count reads of an AMQP message: a quorum queue's `x-delivery-count` header. */
interface AmqpDelivery {
  readonly properties: { readonly headers?: Record<string, unknown> };
}

/** What to do with a failed AMQP delivery: requeue after `delayMs`, or dead-letter once the attempts are spent. @internal */
export type AmqpFailure = { readonly attempt: number } & ({ readonly exhausted: true } | { readonly exhausted: false; readonly delayMs: number });

/** Failed attempts remembered per message; the oldest are forgotten beyond this many. */
const MAX_REMEMBERED_FAILURES = 10_000;

/**
 * Counts the failed deliveries of AMQP messages, for both RabbitMQ adapters: the broker's
 * delivery count where the queue keeps one (quorum), else this process's own (a bounded map of
 * the most recent failures, by the verdict's `attemptKey`). A failure below `maxAttempts` waits
 * `retryDelayMs`, doubled with each further failure up to 64 times (`retryDelayMs`).
 * @internal
 */
export class AmqpFailureCount {
  private readonly failedAttempts = new Map<string, number>();

  /** Counts one more failure of `message` and says whether to requeue it (after how long) or dead-letter it. */
  fail(retry: Extract<Verdict, { kind: 'retry' }>, message: AmqpDelivery): AmqpFailure {
    const counted = (this.failedAttempts.get(retry.attemptKey) ?? 0) + 1;
    this.failedAttempts.delete(retry.attemptKey);
    this.failedAttempts.set(retry.attemptKey, counted);
    if (this.failedAttempts.size > MAX_REMEMBERED_FAILURES) {
      this.failedAttempts.delete(this.failedAttempts.keys().next().value as string);
    }
    const deliveryCount = Number(message.properties.headers?.['x-delivery-count'] ?? 0);
    const attempt = Math.max(counted, deliveryCount + 1);
    if (attempt >= retry.maxAttempts) {
      this.failedAttempts.delete(retry.attemptKey);
      return { attempt, exhausted: true };
    }
    return { attempt, exhausted: false, delayMs: retryDelayMs(retry, attempt) };
  }
}
