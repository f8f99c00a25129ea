import type { Logger } from '@nestjs/common';
import { retryDelayMs } from '../transport.constants.js';
import { failureOutcomes, transportMessages } from '../transport.messages.js';
import type { Verdict } from '../message-transport.js';

/** The transport's name in metrics, traces and logs. */
export const JETSTREAM_TRANSPORT_NAME = 'nats-jetstream';

/** What the module reads of a JetStream message (`JsMsg` of the `nats` client, v2 and v3 alike). */
export interface JetStreamMessage {
  readonly subject: string;
  readonly headers?: { has(name: string): boolean; get(name: string): string };
  /** v2 names the count of deliveries `redeliveryCount`, v3 `deliveryCount`: both start at 1. */
  readonly info: { readonly deliveryCount?: number; readonly redeliveryCount?: number };
  ack(): void;
  nak(delayMs?: number): void;
  /** Called without a reason: a server before 2.10 takes `+TERM <reason>` for no answer at all, and redelivers. */
  term(): void;
}

/**
 * The JetStream message of a delivery of `@nestjs-plugins/nestjs-nats-jetstream-transport`, read
 * from its `NatsJetStreamContext` (the handler's second argument); undefined for anything else.
 * The class is recognised by its name and its message's shape, without loading the plugin: it is
 * CommonJS built on `@nestjs/microservices`, which only an application that uses it should load.
 */
export function jetStreamMessageOf(context: unknown): JetStreamMessage | undefined {
  if (context?.constructor?.name !== 'NatsJetStreamContext') {
    return undefined;
  }
  const message = (context as { message?: Partial<JetStreamMessage> }).message;
  const settles = typeof message?.ack === 'function' && typeof message.nak === 'function' && typeof message.term === 'function';
  return settles && typeof message.info === 'object' ? (message as JetStreamMessage) : undefined;
}

/**
 * Settles a JetStream message by its verdict: `ack`; `nak` with a delay that doubles with each
 * delivery (the broker counts them, so the count survives a restart of the consumer); `term`
 * when it can never succeed or its attempts are spent, so JetStream never redelivers it. A
 * settlement the connection lost is no failure: the message is redelivered after `ack_wait`, and
 * the claim answers it as a duplicate or processes it.
 */
export function settleJetStreamMessage(message: JetStreamMessage, messageId: unknown, verdict: Verdict, logger: Logger): void {
  try {
    if (verdict.kind === 'ack') {
      message.ack();
      return;
    }
    const failed = (outcome: string) => transportMessages.deliveryFailed({ transport: JETSTREAM_TRANSPORT_NAME, messageId, ...verdict, outcome, cause: verdict.reason });
    if (verdict.kind === 'dead-letter') {
      logger.error(failed(failureOutcomes.terminated()));
      message.term();
    } else {
      const attempt = message.info.deliveryCount ?? message.info.redeliveryCount ?? 1;
      if (attempt >= verdict.maxAttempts) {
        logger.error(failed(failureOutcomes.terminated(attempt)));
        message.term();
      } else {
        const delayMs = retryDelayMs(verdict, attempt);
        logger.warn(failed(failureOutcomes.requeued(attempt, verdict.maxAttempts, delayMs)));
        message.nak(delayMs);
      }
    }
  } catch (error) {
    logger.warn(transportMessages.settleFailed(message.subject, (error as Error).message));
  }
}
