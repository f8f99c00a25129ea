import { type ExecutionContext, Injectable, Logger } from '@nestjs/common';
import type { InboundMessage, MessageTransport } from '../message-transport.js';
import { JETSTREAM_TRANSPORT_NAME, jetStreamMessageOf, settleJetStreamMessage } from './jetstream-message.js';

/** The header JetStream de-duplicates publishes by, and the default key of its messages. */
const NATS_MSG_ID_HEADER = 'Nats-Msg-Id';

/**
 * NATS JetStream through `@nestjs-plugins/nestjs-nats-jetstream-transport` (`NatsJetStreamServer`
 * with `manualAck: true`): an `@EventPattern` handler on a durable consumer. The key is the
 * `Nats-Msg-Id` header; the module settles each message itself: ack after the commit, `nak` with
 * a delay after a failure, `term` after `maxAttempts` deliveries, and logs the failure: Nest does
 * not log it again.
 */
@Injectable()
export class NatsJetStreamTransport implements MessageTransport {
  readonly name = JETSTREAM_TRANSPORT_NAME;
  readonly messageIdSource = `the ${NATS_MSG_ID_HEADER} header`;
  private readonly logger = new Logger('Idempotency');

  read(context: ExecutionContext): InboundMessage | undefined {
    const message = context.getType() === 'rpc' ? jetStreamMessageOf(context.getArgByIndex(1)) : undefined;
    if (!message) {
      return undefined;
    }
    const header = (name: string) => (message.headers?.has(name) ? message.headers.get(name) : undefined);
    let settled = false;
    const messageId = header(NATS_MSG_ID_HEADER);
    return {
      payload: context.getArgByIndex(0),
      messageId,
      header,
      settle: (verdict) => {
        if (!settled) {
          settled = true;
          settleJetStreamMessage(message, messageId, verdict, this.logger);
        }
        return verdict.kind === 'ack' ? undefined : { reported: true };
      },
    };
  }
}
