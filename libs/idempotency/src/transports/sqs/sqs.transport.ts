import { type ExecutionContext, Injectable, Logger } from '@nestjs/common';
import { SqsConsumers } from './sqs-consumers.js';
import { sqsMessages } from './sqs.messages.js';
import { transportMessages } from '../transport.messages.js';
import type { InboundMessage, MessageTransport, ProviderCallSplit, ProviderHandlerKind, Verdict } from '../message-transport.js';

/** The metadata key under which `@ssut/nestjs-sqs` keeps `@SqsMessageHandler(name, batch)`. */
const SQS_CONSUMER_METHOD = Symbol.for('SQS_CONSUMER_METHOD');

/** What `@SqsMessageHandler(name, batch)` stores on its method. @internal */
export interface SqsHandlerMetadata {
  /** The name of the consumer in `SqsModule`'s options, whose queue the handler consumes. */
  readonly name: string;
  readonly batch?: boolean;
}

/** What the module reads of an SQS message as `@aws-sdk/client-sqs` receives it. */
interface SqsMessage {
  readonly MessageId?: string;
  readonly ReceiptHandle?: string;
  readonly Body?: string;
  readonly Attributes?: Record<string, string | undefined>;
  readonly MessageAttributes?: Record<string, { readonly StringValue?: string } | undefined>;
}

/** The `@SqsMessageHandler()` metadata of a method; undefined when it has none. @internal */
export function sqsHandlerOf(method: unknown): SqsHandlerMetadata | undefined {
  return typeof method === 'function' ? (Reflect.getMetadata(SQS_CONSUMER_METHOD, method) as SqsHandlerMetadata | undefined) : undefined;
}

/**
 * Amazon SQS through `@ssut/nestjs-sqs` (sqs-consumer), whose `@SqsMessageHandler` methods are
 * called without Nest's interceptors: each call enters the claim core with the SQS message as the
 * context's first argument. The key is the message's `MessageDeduplicationId` system attribute
 * where the consumer receives it (FIFO queues), else its `MessageId`. sqs-consumer deletes what the
 * call answers: the message once its claim committed or found a duplicate; a failure is thrown,
 * so the message reappears later (a failure to be retried after its growing retry delay:
 * `SqsConsumers.delayRedelivery`; one that can never succeed after its visibility timeout), and
 * the queue's redrive policy moves it to the dead-letter queue after `maxReceiveCount` receives.
 * @internal
 */
@Injectable()
export class SqsTransport implements MessageTransport {
  readonly name = 'sqs';
  readonly messageIdSource = 'the SQS MessageDeduplicationId (FIFO) or MessageId';
  private readonly logger = new Logger('Idempotency');

  constructor(private readonly consumers: SqsConsumers) {}

  read(context: ExecutionContext): InboundMessage | undefined {
    const message = context.getArgByIndex<SqsMessage | undefined>(0);
    if (context.getType<string>() !== this.name || typeof message?.MessageId !== 'string') {
      return undefined;
    }
    const consumer = sqsHandlerOf(context.getHandler())?.name;
    const queue = `sqs ${consumer ?? '(unknown)'}`;
    return {
      payload: parseBody(message.Body),
      messageId: message.Attributes?.MessageDeduplicationId ?? message.MessageId,
      header: (name) => message.MessageAttributes?.[name]?.StringValue,
      settle: (verdict) => {
        this.log(message.MessageId!, verdict);
        if (verdict.kind === 'retry' && consumer !== undefined) {
          this.consumers.delayRedelivery(consumer, message, verdict).catch((error: unknown) => {
            this.logger.warn(sqsMessages.sqsRetryDelayNotSet(queue, message.MessageId!, error instanceof Error ? error.message : String(error)));
          });
        }
      },
    };
  }

  private log(messageId: string, verdict: Verdict): void {
    if (verdict.kind === 'ack') {
      return;
    }
    const failed = (outcome: string) => transportMessages.deliveryFailed({ transport: this.name, messageId, ...verdict, outcome, cause: verdict.reason });
    if (verdict.kind === 'dead-letter') {
      this.logger.error(failed(sqsMessages.leftForRedrive('can never succeed')));
    } else {
      this.logger.warn(failed(sqsMessages.leftForRedrive('failed')));
    }
  }
}

/** The message body as JSON when it is JSON, else as the string it is. */
function parseBody(body: string | undefined): unknown {
  try {
    return body === undefined ? undefined : (JSON.parse(body) as unknown);
  } catch {
    return body;
  }
}

/**
 * `@SqsMessageHandler` methods: the default consumer is `sqs <consumer name>`. A handler's call
 * answers the message itself (sqs-consumer deletes it) whatever the handler returned; a batch
 * handler (`@SqsMessageHandler(name, true)`) is called once per message of the batch, with an
 * array of that one message, each in its own claim, in order until one fails, and answers the
 * messages that committed or were duplicates, the ones sqs-consumer deletes. It never throws: a
 * batch handler's failure is an `error` event of sqs-consumer, which ends a process that has no
 * listener for it.
 * @internal
 */
export const SQS_HANDLERS: ProviderHandlerKind = {
  transport: 'sqs',
  calls: SqsTransport,
  contract(target, methodName) {
    const handler = sqsHandlerOf(target.prototype[methodName]);
    return handler && `sqs ${handler.name}`;
  },
  splitCall(method, args): ProviderCallSplit {
    if (sqsHandlerOf(method)?.batch !== true) {
      return {
        messages: [{ contextArgs: args, callArgs: args }],
        answer: (settled, failure) => {
          if (settled === 0) {
            throw failure;
          }
          return args[0];
        },
      };
    }
    const batch = args[0] as unknown[];
    return {
      messages: batch.map((message) => ({ contextArgs: [message], callArgs: [[message], ...args.slice(1)] })),
      answer: (settled) => batch.slice(0, settled),
    };
  },
};
