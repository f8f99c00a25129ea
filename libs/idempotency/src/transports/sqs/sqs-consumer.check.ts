import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { IdempotencyExplorer } from '../../discovery/idempotency.explorer.js';
import { IdempotencyOptionsError } from '../../errors/idempotency-options.error.js';
import { sqsMessages } from './sqs.messages.js';
import { SQS_HANDLERS, sqsHandlerOf } from './sqs.transport.js';

/** The token of `SqsModule`'s options in `@ssut/nestjs-sqs`. */
const SQS_OPTIONS = Symbol.for('SQS_OPTIONS');

/** What the check reads of a consumer in `SqsModule`'s options (sqs-consumer's `ConsumerOptions`). */
interface SqsConsumerOptions {
  readonly name: string;
  readonly queueUrl?: string;
  readonly shouldDeleteMessages?: boolean;
  readonly alwaysAcknowledge?: boolean;
  readonly attributeNames?: readonly string[];
  readonly messageSystemAttributeNames?: readonly string[];
}

/**
 * Refuses SQS consumers whose settings would lose or repeat the messages of an idempotent handler:
 * `shouldDeleteMessages: false` (a processed message is never deleted: it comes back until the
 * redrive policy dead-letters it), `alwaysAcknowledge: true` on a batch handler (the messages of a
 * batch that failed would be deleted with those that committed), and a FIFO queue whose consumer
 * does not receive the `MessageDeduplicationId` attribute for a handler keyed by default (a
 * producer's retried send gets a new `MessageId`).
 */
@Injectable()
export class SqsConsumerCheck implements OnModuleInit {
  constructor(
    private readonly moduleRef: ModuleRef,
    private readonly explorer: IdempotencyExplorer,
  ) {}

  onModuleInit(): void {
    const consumers = this.consumers();
    for (const { handler, provider } of this.explorer.discovered()) {
      const metadata = provider?.kind === SQS_HANDLERS ? sqsHandlerOf((provider.wrapper.metatype as { prototype: Record<string, unknown> }).prototype[provider.methodName]) : undefined;
      const consumer = metadata && consumers.find((candidate) => candidate.name === metadata.name);
      const problem = consumer && problemOf(consumer, metadata.batch === true, handler.key === undefined);
      if (problem) {
        throw new IdempotencyOptionsError(sqsMessages.sqsConsumerRefused(consumer.name, handler.name, problem));
      }
    }
  }

  private consumers(): readonly SqsConsumerOptions[] {
    try {
      return (this.moduleRef.get<{ consumers?: SqsConsumerOptions[] }>(SQS_OPTIONS, { strict: false }).consumers ?? []);
    } catch {
      return []; // no SqsModule in this application
    }
  }
}

function problemOf(consumer: SqsConsumerOptions, batch: boolean, keyedByDefault: boolean): string | undefined {
  if (consumer.shouldDeleteMessages === false) {
    return 'it never deletes a message (shouldDeleteMessages: false): remove that option; the module answers each message to be deleted once its claim committed.';
  }
  if (batch && consumer.alwaysAcknowledge === true) {
    return 'it deletes every message of a batch (alwaysAcknowledge: true), those that failed too: remove that option.';
  }
  const attributes = [...(consumer.attributeNames ?? []), ...(consumer.messageSystemAttributeNames ?? [])];
  if (keyedByDefault && consumer.queueUrl?.endsWith('.fifo') && !attributes.includes('MessageDeduplicationId') && !attributes.includes('All')) {
    return "its FIFO queue's messages are keyed by their deduplication id, which it does not receive: add messageSystemAttributeNames: ['MessageDeduplicationId'].";
  }
  return undefined;
}
