import type { SendMessageCommand } from '@aws-sdk/client-sqs';
import { IDEMPOTENCY_KEY_HEADER } from '../../idempotency.constants.js';
import { loadOptionalPackage } from '../../optional/load-optional-package.js';
import type { OutboxPublisher, OutgoingMessage, PublishAttempt } from '../outbox-publisher.js';

/** What `SqsPublisher` needs of an SQS client: the `SQSClient` of `@aws-sdk/client-sqs`. */
export interface SqsSending {
  send(command: object, options?: { abortSignal?: AbortSignal }): Promise<unknown>;
}

/** `SqsPublisher`'s options. */
export interface SqsPublisherOptions {
  /** The `SQSClient` of `@aws-sdk/client-sqs` that sends the messages. You destroy it. */
  readonly client: SqsSending;
  /**
   * The message attribute that carries the message's id on every queue, for consumers that key by
   * it (`@IdempotentHandler({ key: { header: 'Idempotency-Key' } })`), as those of standard queues must.
   * @default 'Idempotency-Key'
   */
  readonly idAttribute?: string;
}

/** SQS's limit on a `MessageDeduplicationId` and a `MessageGroupId`, and the characters they may hold (letters, digits, punctuation). */
const FIFO_ID = /^[\x21-\x7e]{1,128}$/;
/** The characters SQS accepts in a message attribute's name. */
const ATTRIBUTE_NAME = /^(?!\.)(?!.*\.\.)(?!.*\.$)(?!aws\.)(?!amazon\.)[\w.-]{1,256}$/i;
/** The characters SQS accepts in a message attribute's value (and a body), none at all excepted. */
const ATTRIBUTE_VALUE = /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]+$/u;
/** SQS's limit on the attributes of one message. */
const MAX_ATTRIBUTES = 10;

/**
 * Publishes outbox messages to Amazon SQS through an `SQSClient` of `@aws-sdk/client-sqs` (an
 * optional peer): the message's `address` is the queue's URL, its payload the body, its headers
 * string message attributes, and its id the `Idempotency-Key` message attribute (`idAttribute`).
 * A publish resolves when SQS accepted the message.
 *
 * On a FIFO queue (a URL ending in `.fifo`) the id is also the `MessageDeduplicationId`, the key
 * this module's SQS consumers read by default (SQS drops a repeat inside its five-minute
 * deduplication interval), and the `MessageGroupId` is the message's ordering key, else its id:
 * a message without an ordering key is in no order, a group of its own.
 *
 * On a standard queue SQS keeps no id of the sender's: the consumers' default key there is the
 * `MessageId` SQS gives each send, so a message the relay sent twice would reach them as two. Key
 * their handlers by the attribute: `@IdempotentHandler({ key: { header: 'Idempotency-Key' } })`. The
 * relay sends a standard queue's messages of one ordering key in order, but SQS may deliver them in another.
 *
 * SQS has no pattern (its consumers are chosen by the queue): `refuse()` answers messages with
 * one, and what SQS would refuse (an id or ordering key beyond its 128 characters on a FIFO
 * queue, more than nine headers, header names or values it does not accept).
 *
 * @example
 * ```ts
 * outbox: { publishers: { sqs: new SqsPublisher({ client: new SQSClient({ region: 'eu-west-1' }) }) } }
 * ```
 */
export class SqsPublisher implements OutboxPublisher {
  private command: Promise<typeof SendMessageCommand> | undefined;

  constructor(private readonly options: SqsPublisherOptions) {}

  refuse(message: OutgoingMessage): string | undefined {
    const idAttribute = this.options.idAttribute ?? IDEMPOTENCY_KEY_HEADER;
    if (message.pattern !== undefined) {
      return 'an SQS message has no pattern: its consumer is chosen by the queue, its `address`.';
    }
    if (!/^https?:\/\/[^/]+\/./.test(message.address)) {
      return `an SQS message's address is its queue's URL (https://sqs.<region>.amazonaws.com/<account>/<queue>), not '${message.address}'.`;
    }
    if (isFifo(message.address)) {
      if (!FIFO_ID.test(message.id)) {
        return 'on a FIFO queue the id is the MessageDeduplicationId: at most 128 letters, digits or punctuation characters.';
      }
      if (message.orderingKey !== undefined && !FIFO_ID.test(message.orderingKey)) {
        return 'on a FIFO queue the ordering key is the MessageGroupId: at most 128 letters, digits or punctuation characters.';
      }
    }
    if (!ATTRIBUTE_VALUE.test(message.id)) {
      return `the id, the '${idAttribute}' message attribute, holds characters SQS does not accept.`;
    }
    const names = Object.keys(message.headers);
    if (names.length + 1 > MAX_ATTRIBUTES) {
      return `SQS takes ${MAX_ATTRIBUTES} message attributes, the id's among them: at most ${MAX_ATTRIBUTES - 1} headers.`;
    }
    for (const [name, value] of Object.entries(message.headers)) {
      if (name === idAttribute) {
        return `the header '${name}' is the message attribute that carries the id.`;
      }
      if (!ATTRIBUTE_NAME.test(name)) {
        return `SQS does not accept '${name}' as a message attribute's name (letters, digits, '-', '_', '.'; not AWS. or Amazon.).`;
      }
      if (!ATTRIBUTE_VALUE.test(value)) {
        return `SQS does not accept the value of the header '${name}' (empty, or characters it refuses).`;
      }
    }
    return undefined;
  }

  async publish(message: OutgoingMessage, attempt?: PublishAttempt): Promise<void> {
    const Send = await (this.command ??= this.loadCommand());
    const attributes = { ...message.headers, [this.options.idAttribute ?? IDEMPOTENCY_KEY_HEADER]: message.id };
    await this.options.client.send(
      new Send({
        QueueUrl: message.address,
        MessageBody: message.payload,
        MessageAttributes: Object.fromEntries(Object.entries(attributes).map(([name, value]) => [name, { DataType: 'String', StringValue: value }])),
        ...(isFifo(message.address) ? { MessageDeduplicationId: message.id, MessageGroupId: message.orderingKey ?? message.id } : {}),
      }),
      { abortSignal: attempt?.signal },
    );
  }

  private async loadCommand(): Promise<typeof SendMessageCommand> {
    try {
      return (await loadOptionalPackage('@aws-sdk/client-sqs', 'SqsPublisher', () => import('@aws-sdk/client-sqs'))).SendMessageCommand;
    } catch (error) {
      this.command = undefined;
      throw error;
    }
  }
}

/** Whether the queue at `url` is a FIFO queue: SQS names them `<name>.fifo`. */
function isFifo(url: string): boolean {
  return url.replace(/[?#].*$/, '').endsWith('.fifo');
}
