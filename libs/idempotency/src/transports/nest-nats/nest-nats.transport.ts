import { type ExecutionContext, Inject, Injectable, Logger } from '@nestjs/common';
import type { InboundMessage, MessageTransport } from '../message-transport.js';
import { NEST_MICROSERVICES, type NestMicroservices } from '../nest-microservices.js';
import { failureOutcomes, transportMessages } from '../transport.messages.js';

/** The header NATS JetStream uses for de-duplication, and the default key of NATS messages. */
const NATS_MSG_ID_HEADER = 'Nats-Msg-Id';

interface NatsHeaders {
  has(name: string): boolean;
  get(name: string): string;
}

/**
 * NATS request-reply through `@nestjs/microservices` (`Transport.NATS`): the key is the
 * `Nats-Msg-Id` header. NATS core has no acknowledgement: the requester's retry is the redelivery.
 * A failure is logged, and answered to the requester as Nest answers it.
 */
@Injectable()
export class NestNatsTransport implements MessageTransport {
  readonly name = 'nats';
  readonly messageIdSource = `the ${NATS_MSG_ID_HEADER} header`;
  private readonly logger = new Logger('Idempotency');

  constructor(@Inject(NEST_MICROSERVICES) private readonly microservices: NestMicroservices | undefined) {}

  read(context: ExecutionContext): InboundMessage | undefined {
    const nats: unknown = context.getArgByIndex(1);
    if (context.getType() !== 'rpc' || !this.microservices || !(nats instanceof this.microservices.NatsContext)) {
      return undefined;
    }
    const headers = nats.getHeaders() as NatsHeaders | undefined;
    const header = (name: string) => (headers?.has(name) ? headers.get(name) : undefined);
    const messageId = header(NATS_MSG_ID_HEADER);
    return {
      payload: context.getArgByIndex(0),
      messageId,
      header,
      settle: (verdict) => {
        if (verdict.kind !== 'ack') {
          this.logger.warn(transportMessages.deliveryFailed({ transport: this.name, messageId, ...verdict, outcome: failureOutcomes.notRedelivered(), cause: verdict.reason }));
        }
      },
    };
  }
}
