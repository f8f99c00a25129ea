import { type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { InboundMessage, MessageTransport } from '../message-transport.js';
import { NEST_MICROSERVICES, type NestMicroservices } from '../nest-microservices.js';
import { type AmqpMessage, RmqAcknowledgements } from './rmq-acknowledgements.js';
import { RMQ_TRANSPORT_NAME } from './rmq.constants.js';

/**
 * RabbitMQ through `@nestjs/microservices` (`Transport.RMQ`, with `noAck: false`): the key is the
 * AMQP `messageId` property; the module acknowledges each message itself, once every idempotent
 * `@EventPattern` handler of its pattern has settled (see `RmqAcknowledgements`), and logs each
 * failure itself: Nest does not log it again.
 */
@Injectable()
export class NestRmqTransport implements MessageTransport {
  readonly name = RMQ_TRANSPORT_NAME;
  readonly messageIdSource = 'the AMQP messageId property';

  constructor(
    @Inject(NEST_MICROSERVICES) private readonly microservices: NestMicroservices | undefined,
    private readonly acknowledgements: RmqAcknowledgements,
  ) {}

  read(context: ExecutionContext, fanOut: (pattern: string) => number): InboundMessage | undefined {
    const rmq: unknown = context.getArgByIndex(1);
    if (context.getType() !== 'rpc' || !this.microservices || !(rmq instanceof this.microservices.RmqContext)) {
      return undefined;
    }
    const { properties } = rmq.getMessage() as AmqpMessage;
    const settle = this.acknowledgements.join(rmq, fanOut(rmq.getPattern()));
    return {
      payload: context.getArgByIndex(0),
      messageId: properties.messageId,
      header: (name) => properties.headers?.[name],
      settle: (verdict) => {
        settle(verdict);
        return verdict.kind === 'ack' ? undefined : { reported: true };
      },
    };
  }
}
