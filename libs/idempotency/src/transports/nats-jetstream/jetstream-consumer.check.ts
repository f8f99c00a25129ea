import { Injectable } from '@nestjs/common';
import { IdempotencyOptionsError } from '../../errors/idempotency.errors.js';
import { type MicroserviceServer, MicroserviceServerCheck } from '../microservice-server.check.js';
import { jetStreamMessages } from './jetstream.messages.js';
import { subjectCovers } from './jetstream-subjects.js';

/** The description of the plugin's `NATS_JETSTREAM_TRANSPORT` symbol, its servers' `transportId`. */
const JETSTREAM_TRANSPORT = 'NATS_JETSTREAM_TRANSPORT';

/** The JetStream API's `err_code` for a consumer whose deliver subject its own stream stores. */
const DELIVER_SUBJECT_CYCLE = 10081;

/** What the check reads of a stream the plugin creates or updates (`streamConfig`). */
interface StreamConfig {
  readonly name: string;
  readonly subjects?: readonly string[];
}

/** What the check reads of the plugin's `NatsJetStreamServer`: its consumer options and the streams it sets up. */
interface JetStreamServer extends MicroserviceServer {
  readonly options?: {
    readonly consumerOptions?: {
      readonly manualAck?: boolean;
      readonly ackPolicy?: string;
      readonly durable?: string;
      readonly deliverTo?: string;
      readonly deliverToSubject?: string;
    };
    readonly streamConfig?: StreamConfig | readonly StreamConfig[];
  };
}

/** What a failed JetStream API call of the `nats` client carries. */
interface JetStreamApiError {
  readonly message?: string;
  readonly api_error?: { readonly err_code?: number };
}

/**
 * Refuses a JetStream consumer of `@nestjs-plugins/nestjs-nats-jetstream-transport` that would
 * lose messages, or never receive any, when it delivers to an idempotent handler: without
 * `manualAck: true` the client acknowledges each message as soon as the handler was called,
 * before its commit; with `ackPolicy: 'None'` nothing is ever redelivered, and with `'All'` one
 * message's ack also acknowledges every earlier one still in flight. A deliver subject that the
 * consumer's own stream stores is a cycle nats-server refuses: refused before the plugin connects
 * when the plugin's `streamConfig` says the stream's subjects, else the server's refusal is
 * turned into a boot error that says the same.
 */
@Injectable()
export class JetStreamConsumerCheck extends MicroserviceServerCheck<JetStreamServer> {
  protected isChecked(server: MicroserviceServer): server is JetStreamServer {
    return typeof server.transportId === 'symbol' && server.transportId.description === JETSTREAM_TRANSPORT;
  }

  protected problemOf(server: JetStreamServer): IdempotencyOptionsError | undefined {
    const { manualAck, ackPolicy, durable } = server.options?.consumerOptions ?? {};
    const setting = manualAck !== true ? `manualAck: ${String(manualAck)}` : ackPolicy === 'None' || ackPolicy === 'All' ? `ackPolicy: '${ackPolicy}'` : undefined;
    const handler = this.idempotentHandlerOf(server, true);
    if (!handler) {
      return undefined;
    }
    if (setting !== undefined) {
      return new IdempotencyOptionsError(jetStreamMessages.jetStreamAcksWithoutCommit(durable ?? '(ephemeral)', setting, handler.name));
    }
    const deliverTo = deliverSubjectOf(server);
    const stream = deliverTo === undefined ? undefined : streamsOf(server).find((candidate) => storesDeliveries(candidate, deliverTo, server));
    return stream && new IdempotencyOptionsError(jetStreamMessages.deliverSubjectInStream(handler.name, deliverTo!, stream.name, stream.subjects ?? []));
  }

  protected override refusalOf(server: JetStreamServer, error: unknown): unknown {
    const handler = (error as JetStreamApiError | undefined)?.api_error?.err_code === DELIVER_SUBJECT_CYCLE ? this.idempotentHandlerOf(server, true) : undefined;
    const deliverTo = deliverSubjectOf(server);
    return handler && deliverTo !== undefined
      ? new IdempotencyOptionsError(jetStreamMessages.deliverSubjectRefused(handler.name, deliverTo, String((error as Error).message)), { cause: error })
      : error;
  }
}

/** The subject the plugin has JetStream push each message to: `deliverToSubject`, else an inbox under `deliverTo` (`*` its id). */
function deliverSubjectOf(server: JetStreamServer): string | undefined {
  const { deliverTo, deliverToSubject } = server.options?.consumerOptions ?? {};
  return deliverTo ? `${deliverTo}.*` : deliverToSubject || undefined;
}

function streamsOf(server: JetStreamServer): readonly StreamConfig[] {
  const config = server.options?.streamConfig;
  return config === undefined ? [] : Array.isArray(config) ? (config as readonly StreamConfig[]) : [config as StreamConfig];
}

/** Whether `stream` stores both the subject the server's consumers deliver to and one its handlers consume. */
function storesDeliveries(stream: StreamConfig, deliverTo: string, server: JetStreamServer): boolean {
  const subjects = stream.subjects ?? [];
  const stores = (subject: string) => subjects.some((filter) => subjectCovers(filter, subject));
  return stores(deliverTo) && [...server.getHandlers().keys()].some(stores);
}
