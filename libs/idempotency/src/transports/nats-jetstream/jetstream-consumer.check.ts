import { Injectable } from '@nestjs/common';
import { IdempotencyOptionsError } from '../../errors/idempotency-options.error.js';
import { type MicroserviceServer, MicroserviceServerCheck } from '../microservice-server.check.js';
import { jetStreamMessages } from './jetstream.messages.js';

/** The description of the plugin's `NATS_JETSTREAM_TRANSPORT` symbol, its servers' `transportId`. */
const JETSTREAM_TRANSPORT = 'NATS_JETSTREAM_TRANSPORT';

/** What the check reads of the plugin's `NatsJetStreamServer`: its consumer options. */
interface JetStreamServer extends MicroserviceServer {
  readonly options?: { readonly consumerOptions?: { readonly manualAck?: boolean; readonly ackPolicy?: string; readonly durable?: string } };
}

/**
 * Refuses a JetStream consumer of `@nestjs-plugins/nestjs-nats-jetstream-transport` that would
 * lose messages, when it delivers to an idempotent handler: without `manualAck: true` the client
 * acknowledges each message as soon as the handler was called, before its commit; with
 * `ackPolicy: 'None'` nothing is ever redelivered, and with `'All'` one message's ack also
 * acknowledges every earlier one still in flight.
 */
@Injectable()
export class JetStreamConsumerCheck extends MicroserviceServerCheck<JetStreamServer> {
  protected isChecked(server: MicroserviceServer): server is JetStreamServer {
    return typeof server.transportId === 'symbol' && server.transportId.description === JETSTREAM_TRANSPORT;
  }

  protected problemOf(server: JetStreamServer): IdempotencyOptionsError | undefined {
    const { manualAck, ackPolicy, durable } = server.options?.consumerOptions ?? {};
    const setting = manualAck !== true ? `manualAck: ${String(manualAck)}` : ackPolicy === 'None' || ackPolicy === 'All' ? `ackPolicy: '${ackPolicy}'` : undefined;
    const handler = setting === undefined ? undefined : this.idempotentHandlerOf(server, true);
    return handler && new IdempotencyOptionsError(jetStreamMessages.jetStreamAcksWithoutCommit(durable ?? '(ephemeral)', setting!, handler.name));
  }
}
