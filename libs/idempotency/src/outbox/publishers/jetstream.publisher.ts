import type { OutboxPublisher, OutgoingMessage } from '../outbox-publisher.js';

/** What `JetStreamPublisher` needs of a JetStream client (`jetstream(nc)` of `@nats-io/jetstream`). */
export interface JetStreamPublishing {
  // The options name only what every call passes: a client's own `headers` type (MsgHdrs) would
  // not take an `unknown` here, and `jetstream(nc)` would not compile as this option.
  publish(subject: string, payload: string, options: { msgID: string }): Promise<unknown>;
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
 * when the stream acknowledged it. A Nest JetStream consumer takes its pattern from the subject,
 * so messages for it carry no `pattern`.
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
    await this.options.jetstream.publish(message.address, message.payload, { msgID: message.id, ...(headers ? { headers } : {}) });
  }
}
