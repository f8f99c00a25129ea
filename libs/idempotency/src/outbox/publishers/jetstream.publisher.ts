import type { OutboxPublisher, OutgoingMessage } from '../outbox-publisher.js';
import { outboxMessages } from '../outbox.messages.js';

/** What `JetStreamPublisher` needs of a JetStream client (`jetstream(nc)` of `@nats-io/jetstream`). */
export interface JetStreamPublishing {
  /** The options are as optional as JetStream's client has them, so that it is one (the publisher always passes a `msgID`). */
  publish(subject: string, payload: string, options?: { msgID?: string; headers?: { set(name: string, value: string): void } }): Promise<unknown>;
}

/** `JetStreamPublisher`'s options. */
export interface JetStreamPublisherOptions {
  /** The JetStream client: `jetstream(await connect({ servers }))`. You close its connection. */
  readonly jetstream: JetStreamPublishing;
  /**
   * Builds NATS headers from the message's: `headers` of `@nats-io/transport-node`. Needed only
   * for messages with headers.
   */
  readonly headers?: () => { set(name: string, value: string): void };
}

/**
 * Publishes outbox messages to NATS JetStream: the message's `address` is the subject, its payload
 * the data, its id the `Nats-Msg-Id` header (JetStream drops a repeat inside the stream's
 * duplicate window, and this module's JetStream consumers read it as the key). A publish resolves
 * when the stream acknowledged it, and rejects naming the subject when no stream takes it (create
 * the stream before the relay publishes). A Nest JetStream consumer takes its pattern from the
 * subject, so messages for it carry no `pattern`.
 */
export class JetStreamPublisher implements OutboxPublisher {
  constructor(private readonly options: JetStreamPublisherOptions) {}

  refuse(message: OutgoingMessage): string | undefined {
    if (message.pattern !== undefined) {
      return 'a JetStream message has no pattern besides its subject: put the pattern in `address`.';
    }
    if (Object.keys(message.headers).length > 0 && this.options.headers === undefined) {
      return 'messages with headers need the publisher\'s `headers` option (`headers` of @nats-io/transport-node).';
    }
    return undefined;
  }

  async publish(message: OutgoingMessage): Promise<void> {
    const entries = Object.entries(message.headers);
    let headers: { set(name: string, value: string): void } | undefined;
    if (entries.length > 0 && this.options.headers) {
      headers = this.options.headers();
      entries.forEach(([name, value]) => headers!.set(name, value));
    }
    try {
      await this.options.jetstream.publish(message.address, message.payload, { msgID: message.id, ...(headers ? { headers } : {}) });
    } catch (error) {
      // NATS answers "no responders" where no stream takes the subject, which the client reports as "jetstream is not enabled".
      throw (error as Error | undefined)?.name === 'JetStreamNotEnabled' ? new Error(outboxMessages.noStream(message.address), { cause: error }) : error;
    }
  }
}
