import { type ExecutionContext, Injectable, Logger } from '@nestjs/common';
import { AmqpFailureCount } from '../amqp-failure-count.js';
import { failureOutcomes, transportMessages } from '../transport.messages.js';
import type { InboundMessage, MessageTransport, Verdict } from '../message-transport.js';
import { GolevelupNackError } from './golevelup-nack.error.js';
import { GOLEVELUP_RABBITMQ_TRANSPORT } from './golevelup-rabbitmq.handler-kind.js';
import { type GolevelupRabbitmq, GolevelupRabbitmqPackage } from './golevelup-rabbitmq.package.js';

/** What the module reads of the AMQP message golevelup hands a handler as its second argument. */
interface AmqpMessage {
  readonly properties: { readonly messageId?: unknown; readonly headers?: Record<string, unknown> };
}

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
  private readonly failures = new AmqpFailureCount();

  constructor(private readonly golevelupPackage: GolevelupRabbitmqPackage) {}

  read(context: ExecutionContext): InboundMessage | undefined {
    const golevelup = this.golevelupPackage.loaded;
    if (context.getType<string>() !== 'rmq' || !golevelup) {
      return undefined;
    }
    const message = context.getArgByIndex(1) as AmqpMessage;
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
      // A success returns as it is, and golevelup acks it.
      settle: (verdict) => (verdict.kind === 'ack' ? undefined : { reply: this.nackFor(golevelup, verdict, refusedForGood, message) }),
    };
  }

  /** The `Nack` that settles a failed delivery: dead-letter, or requeue once its retry delay has passed. */
  private async nackFor(golevelup: GolevelupRabbitmq, verdict: Exclude<Verdict, { kind: 'ack' }>, refusedForGood: boolean, message: AmqpMessage): Promise<unknown> {
    const failed = (outcome: string) =>
      transportMessages.deliveryFailed({ transport: this.name, messageId: message.properties.messageId, ...verdict, outcome, cause: verdict.reason });
    if (verdict.kind !== 'retry' || refusedForGood) {
      this.logger.error(failed(failureOutcomes.deadLettered()));
      return new golevelup.Nack(false);
    }
    const failure = this.failures.fail(verdict, message);
    if (failure.exhausted) {
      this.logger.error(failed(failureOutcomes.deadLettered(failure.attempt)));
      return new golevelup.Nack(false);
    }
    this.logger.warn(failed(failureOutcomes.requeued(failure.attempt, verdict.maxAttempts, failure.delayMs)));
    // Unacknowledged meanwhile: a crash redelivers it. On shutdown golevelup cancels its consumers,
    // then waits for this answer, so the requeue never comes back to this consumer.
    await new Promise((resolve) => setTimeout(resolve, failure.delayMs));
    return new golevelup.Nack(true);
  }
}
