import { Injectable } from '@nestjs/common';
import { IdempotencyOptionsError } from '../../errors/idempotency.errors.js';
import { type MicroserviceServer, MicroserviceServerCheck } from '../microservice-server.check.js';
import { RMQ_TRANSPORT } from './rmq.constants.js';
import { rmqMessages } from './rmq.messages.js';

/** What the check reads of Nest's `ServerRMQ`: its `noAck` option and its queue. */
interface RmqServer extends MicroserviceServer {
  readonly noAck?: boolean;
  readonly queue?: string;
}

/**
 * Refuses a RabbitMQ consumer that auto-acknowledges (`noAck: true`, Nest's default) and delivers
 * to an idempotent handler: the module acknowledges each message itself after its commit, which
 * an auto-acknowledging channel answers by closing.
 */
@Injectable()
export class RmqConsumerCheck extends MicroserviceServerCheck<RmqServer> {
  protected isChecked(server: MicroserviceServer): server is RmqServer {
    return server.transportId === RMQ_TRANSPORT;
  }

  protected problemOf(server: RmqServer): IdempotencyOptionsError | undefined {
    const handler = server.noAck === false ? undefined : this.idempotentHandlerOf(server);
    return handler && new IdempotencyOptionsError(rmqMessages.autoAcknowledgedQueue(server.queue ?? '(unnamed)', handler.name));
  }
}
