import { type ExecutionContext, Injectable, Logger } from '@nestjs/common';
import { IdempotencyMetadataAccessor } from '../../decorators/idempotency-metadata.accessor.js';
import { MAX_RETRY_DELAY_FACTOR } from '../transport.constants.js';
import { transportMessages } from '../transport.messages.js';
import type { InboundMessage, MessageTransport, Verdict } from '../message-transport.js';
import { GolevelupNackError } from './golevelup-nack.error.js';
import { GOLEVELUP_RABBITMQ_TRANSPORT } from './golevelup-rabbitmq.handler-kind.js';
import { type GolevelupRabbitmq, GolevelupRabbitmqPackage } from './golevelup-rabbitmq.package.js';

/** What the module reads of the AMQP message golevelup hands a handler as its second argument. */
interface AmqpMessage {
  readonly properties: { readonly messageId?: unknown; readonly headers?: Record<string, unknown> };
}

/** Failed attempts remembered per message; the oldest are forgotten beyond this many. */
const MAX_REMEMBERED_FAILURES = 10_000;

/**
 * RabbitMQ through `@golevelup/nestjs-rabbitmq` (`@RabbitSubscribe` methods, context type `rmq`):
 * the key is the AMQP `messageId` property. golevelup acks a message when its handler returns
 * and nacks it when the handler returns `Nack`; the module settles through that: a committed
 * delivery or a duplicate returns (ack); a failed one returns `new Nack(true)` after a delay that
 * doubles with each failure, the message unacknowledged meanwhile (requeue); one that can never
 * succeed, or has failed `maxAttempts` times, returns `new Nack(false)` (dead-letter). So a failure
 * never reaches golevelup's `errorBehavior`. A handler that returns `Nack` rolls its claim back.
 */
@Injectable()
export class GolevelupRabbitTransport implements MessageTransport {
  readonly name = GOLEVELUP_RABBITMQ_TRANSPORT;
  readonly messageIdSource = 'the AMQP messageId property';
  private readonly logger = new Logger('Idempotency');
  private readonly failedAttempts = new Map<string, number>();

  constructor(
    private readonly golevelupPackage: GolevelupRabbitmqPackage,
    private readonly accessor: IdempotencyMetadataAccessor,
  ) {}

  read(context: ExecutionContext): InboundMessage | undefined {
    const golevelup = this.golevelupPackage.loaded;
    if (context.getType<string>() !== 'rmq' || !golevelup) {
      return undefined;
    }
    const message = context.getArgByIndex(1) as AmqpMessage;
    const consumer = this.accessor.resolve(context).consumer;
    let refusedForGood = false;
    return {
      payload: context.getArgByIndex(0),
      messageId: message.properties.messageId,
      header: (name) => message.properties.headers?.[name],
      checkReply: (reply) => {
        if (reply instanceof golevelup.Nack) {
          refusedForGood = !reply.requeue;
          throw new GolevelupNackError(reply.requeue);
        }
        return reply;
      },
      settleByReply: (verdict) => this.settle(golevelup, verdict, refusedForGood, message, consumer),
    };
  }

  private async settle(golevelup: GolevelupRabbitmq, verdict: Verdict, refusedForGood: boolean, message: AmqpMessage, consumer: string): Promise<unknown> {
    const reason = verdict.kind === 'ack' ? '' : verdict.reason;
    if (verdict.kind !== 'retry' || refusedForGood) {
      this.logger.error(transportMessages.deadLettered(consumer, reason));
      return new golevelup.Nack(false);
    }
    const attempt = this.countFailure(verdict.attemptKey, message);
    if (attempt >= verdict.maxAttempts) {
      this.failedAttempts.delete(verdict.attemptKey);
      this.logger.error(transportMessages.deadLettered(consumer, transportMessages.attemptsExhausted(attempt, reason)));
      return new golevelup.Nack(false);
    }
    const delayMs = verdict.retryDelayMs * Math.min(2 ** (attempt - 1), MAX_RETRY_DELAY_FACTOR);
    this.logger.warn(transportMessages.requeued(consumer, attempt, verdict.maxAttempts, delayMs, reason));
    // Unacknowledged meanwhile: a crash redelivers it. On shutdown golevelup cancels its consumers,
    // then waits for this answer, so the requeue never comes back to this consumer.
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    return new golevelup.Nack(true);
  }

  /** This failure's number: the broker's delivery count where the queue keeps one (quorum), else ours. */
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
