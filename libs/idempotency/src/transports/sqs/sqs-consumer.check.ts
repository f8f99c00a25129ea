import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleInit } from '@nestjs/common';
import { IdempotencyExplorer } from '../../discovery/idempotency.explorer.js';
import { IdempotencyOptionsError } from '../../errors/idempotency.errors.js';
import { type SqsConsumerOptions, SqsConsumers } from './sqs-consumers.js';
import { sqsMessages } from './sqs.messages.js';
import { SQS_HANDLERS, sqsHandlerOf } from './sqs.transport.js';

/**
 * Refuses SQS consumers whose settings would lose or repeat the messages of an idempotent handler:
 * `shouldDeleteMessages: false` (a processed message is never deleted: it comes back until the
 * redrive policy dead-letters it), `alwaysAcknowledge: true` on a batch handler (the messages of a
 * batch that failed would be deleted with those that committed), and a FIFO queue whose consumer
 * does not receive the `MessageDeduplicationId` attribute for a handler keyed by default (a
 * producer's retried send gets a new `MessageId`). Once the consumers run, warns of a consumer
 * that does not receive `ApproximateReceiveCount` (a failed message's retry delay cannot grow) and
 * of a queue without a redrive policy (a message that can never succeed comes back until the
 * queue's retention drops it), reading the queue's attributes without holding up the start.
 */
@Injectable()
export class SqsConsumerCheck implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger('Idempotency');

  constructor(
    private readonly consumers: SqsConsumers,
    private readonly explorer: IdempotencyExplorer,
  ) {}

  onModuleInit(): void {
    for (const { handler, consumer, batch } of this.idempotentConsumers()) {
      const problem = problemOf(consumer, batch, handler.key === undefined);
      if (problem) {
        throw new IdempotencyOptionsError(sqsMessages.sqsConsumerRefused(consumer.name, handler.name, problem));
      }
    }
  }

  onApplicationBootstrap(): void {
    for (const { handler, consumer } of this.idempotentConsumers()) {
      if (!receives(consumer, 'ApproximateReceiveCount')) {
        this.logger.warn(sqsMessages.sqsNoReceiveCount(consumer.name, handler.name));
      }
      this.consumers.attributes(consumer.name).then(
        (attributes) => {
          if (!attributes.RedrivePolicy) {
            this.logger.warn(sqsMessages.sqsNoRedrivePolicy(consumer.name, handler.name));
          }
        },
        (error: unknown) => this.logger.warn(sqsMessages.sqsAttributesUnread(consumer.name, error instanceof Error ? error.message : String(error))),
      );
    }
  }

  /** Each consumer that delivers to an idempotent handler, with that handler. */
  private idempotentConsumers() {
    const consumers = this.consumers.all();
    return this.explorer.discovered().flatMap(({ handler, provider }) => {
      const metadata = provider?.kind === SQS_HANDLERS ? sqsHandlerOf((provider.wrapper.metatype as { prototype: Record<string, unknown> }).prototype[provider.methodName]) : undefined;
      const consumer = metadata && consumers.find((candidate) => candidate.name === metadata.name);
      return consumer ? [{ handler, consumer, batch: metadata.batch === true }] : [];
    });
  }
}

/** Whether the consumer receives the system attribute `name` of its messages. */
function receives(consumer: SqsConsumerOptions, name: string): boolean {
  const attributes = [...(consumer.attributeNames ?? []), ...(consumer.messageSystemAttributeNames ?? [])];
  return attributes.includes(name) || attributes.includes('All');
}

function problemOf(consumer: SqsConsumerOptions, batch: boolean, keyedByDefault: boolean): string | undefined {
  if (consumer.shouldDeleteMessages === false) {
    return 'it never deletes a message (shouldDeleteMessages: false): remove that option; the module answers each message to be deleted once its claim committed.';
  }
  if (batch && consumer.alwaysAcknowledge === true) {
    return 'it deletes every message of a batch (alwaysAcknowledge: true), those that failed too: remove that option.';
  }
  if (keyedByDefault && consumer.queueUrl?.endsWith('.fifo') && !receives(consumer, 'MessageDeduplicationId')) {
    return "its FIFO queue's messages are keyed by their deduplication id, which it does not receive: add messageSystemAttributeNames: ['MessageDeduplicationId'].";
  }
  return undefined;
}
