import type { AmqpConnectionManager, ChannelWrapper } from 'amqp-connection-manager';
import { loadOptionalPackage } from '../../optional/load-optional-package.js';
import type { OutboxPublisher, OutgoingMessage, PublishAttempt } from '../outbox-publisher.js';

/** `RabbitMqPublisher`'s options. */
export interface RabbitMqPublisherOptions {
  /** The broker's URLs, tried in turn; the publisher reconnects by itself after the broker restarted. */
  readonly urls: readonly string[];
  /**
   * The exchange messages are published to, with the message's `address` as the routing key.
   * @default '' (the default exchange: `address` is the name of a queue)
   */
  readonly exchange?: string;
}

/**
 * Publishes outbox messages to RabbitMQ (through `amqp-connection-manager`, an optional peer) on a
 * confirm channel: a publish resolves when the broker acknowledged it, persistent, with the
 * message's id as the AMQP `messageId` property (the key this module's RabbitMQ consumers read),
 * its headers, and its pattern in Nest's body (`{ pattern, data }`) when it has one. Messages are
 * `mandatory`: one that no queue receives fails instead of vanishing.
 *
 * @example
 * ```ts
 * outbox: { publishers: { rabbitmq: new RabbitMqPublisher({ urls: [process.env.AMQP_URL!] }) } }
 * ```
 */
export class RabbitMqPublisher implements OutboxPublisher {
  private connection: AmqpConnectionManager | undefined;
  private channel: Promise<ChannelWrapper> | undefined;
  /** Ids of the messages the broker returned as unroutable since their publish began. */
  private readonly returned = new Set<string>();

  constructor(private readonly options: RabbitMqPublisherOptions) {}

  async publish(message: OutgoingMessage, attempt?: PublishAttempt): Promise<void> {
    const channel = await (this.channel ??= this.open());
    const body = message.pattern === undefined ? message.payload : `{"pattern":${JSON.stringify(message.pattern)},"data":${message.payload}}`;
    this.returned.delete(message.id);
    // The broker sends basic.return before the basic.ack of a mandatory message it could not route.
    // `timeout`: a publish buffered while disconnected is dropped when the relay stops waiting, not sent beside its retry.
    await channel.publish(this.options.exchange ?? '', message.address, Buffer.from(body), {
      timeout: attempt?.timeoutMs,
      messageId: message.id,
      persistent: true,
      mandatory: true,
      contentType: 'application/json',
      headers: message.headers,
    });
    if (this.returned.delete(message.id)) {
      throw new Error(`RabbitMQ routed the message to no queue (exchange '${this.options.exchange ?? ''}', routing key '${message.address}')`);
    }
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    this.channel = undefined;
    await connection?.close();
  }

  private async open(): Promise<ChannelWrapper> {
    const amqp = await loadOptionalPackage('amqp-connection-manager', 'RabbitMqPublisher', () => import('amqp-connection-manager'));
    this.connection = amqp.connect([...this.options.urls]);
    return this.connection.createChannel({
      confirm: true,
      json: false,
      setup: (channel: { on(event: 'return', listener: (message: { properties: { messageId?: string } }) => void): void }) => {
        channel.on('return', ({ properties }) => {
          if (properties.messageId !== undefined) {
            this.returned.add(properties.messageId);
          }
        });
      },
    });
  }
}
