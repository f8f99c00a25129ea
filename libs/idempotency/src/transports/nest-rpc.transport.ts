import { type ExecutionContext, Injectable } from '@nestjs/common';
import type { InboundMessage, MessageTransport } from './message-transport.js';

/**
 * Any other transport of `@nestjs/microservices` (TCP, Redis, ...): its messages carry no id and
 * no acknowledgement, so the handler sets `key` (a payload path or a function). Listed last.
 */
@Injectable()
export class NestRpcTransport implements MessageTransport {
  readonly name = 'unknown';
  readonly messageIdSource = undefined;

  read(context: ExecutionContext): InboundMessage | undefined {
    return context.getType() === 'rpc' ? { payload: context.getArgByIndex(0), messageId: undefined, header: () => undefined } : undefined;
  }
}
