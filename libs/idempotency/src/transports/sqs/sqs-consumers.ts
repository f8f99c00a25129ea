import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { loadOptionalPackage } from '../../optional/load-optional-package.js';
import type { Verdict } from '../message-transport.js';
import { sqsRetryDelaySeconds } from './sqs-retry-delay.js';

/** The token of `SqsModule`'s options in `@ssut/nestjs-sqs`. */
const SQS_OPTIONS = Symbol.for('SQS_OPTIONS');

/** What the module reads of a consumer in `SqsModule`'s options (sqs-consumer's `ConsumerOptions`). @internal */
export interface SqsConsumerOptions {
  readonly name: string;
  readonly queueUrl?: string;
  readonly shouldDeleteMessages?: boolean;
  readonly alwaysAcknowledge?: boolean;
  readonly attributeNames?: readonly string[];
  readonly messageSystemAttributeNames?: readonly string[];
  /** The visibility timeout sqs-consumer asks for on each receive, in seconds; else the queue's. */
  readonly visibilityTimeout?: number;
  /** What sqs-consumer sets a failed message's visibility to; when set, the module leaves it to sqs-consumer. */
  readonly terminateVisibilityTimeout?: unknown;
}

/** What the module reads of a received SQS message to delay its redelivery. */
interface ReceivedMessage {
  readonly ReceiptHandle?: string;
  readonly Attributes?: Readonly<Record<string, string | undefined>>;
}

/** `@ssut/nestjs-sqs` and the SQS client it requires as a peer, which only an application with SQS handlers installs. */
interface SqsPackages {
  readonly nestjsSqs: typeof import('@ssut/nestjs-sqs');
  readonly clientSqs: typeof import('@aws-sdk/client-sqs');
}

/**
 * The SQS consumers of this application, as `@ssut/nestjs-sqs` runs them: their options, their
 * queue's attributes, and a received message's visibility, each through the consumer's own SQS
 * client (read through `SqsService`'s private `getQueueInfo()`, here alone; the SQS suite's
 * growing retry delay fails should it change). The packages are loaded on first use only (an
 * application without SQS handlers never asks), once the consumers exist (`SqsModule` creates
 * them in its `onModuleInit`).
 * @internal
 */
@Injectable()
export class SqsConsumers {
  private packages: Promise<SqsPackages> | undefined;
  private readonly attributesByConsumer = new Map<string, Promise<Readonly<Record<string, string>>>>();

  constructor(private readonly moduleRef: ModuleRef) {}

  /** The consumers of `SqsModule`'s options; none without `SqsModule`. */
  all(): readonly SqsConsumerOptions[] {
    try {
      return this.moduleRef.get<{ consumers?: SqsConsumerOptions[] }>(SQS_OPTIONS, { strict: false }).consumers ?? [];
    } catch {
      return []; // no SqsModule in this application
    }
  }

  /** The options of the consumer `name`; undefined when there is none. */
  options(name: string): SqsConsumerOptions | undefined {
    return this.all().find((consumer) => consumer.name === name);
  }

  /** The attributes of the queue of the consumer `name` (`GetQueueAttributes`, all of them), read once; read again after a failed read. */
  attributes(name: string): Promise<Readonly<Record<string, string>>> {
    let attributes = this.attributesByConsumer.get(name);
    if (!attributes) {
      attributes = this.service()
        .then(async ({ service }) => (await service.getQueueAttributes(name)) ?? {})
        .catch((error: unknown) => {
          this.attributesByConsumer.delete(name);
          throw error;
        });
      this.attributesByConsumer.set(name, attributes);
    }
    return attributes;
  }

  /**
   * Hides a message the consumer `name` received and failed to process for its retry delay
   * (`sqsRetryDelaySeconds`, counting its `ApproximateReceiveCount` where the consumer receives
   * it), so SQS shows it again later with each receive. A consumer that sets
   * `terminateVisibilityTimeout` is left to sqs-consumer, which applies it after the failure.
   */
  async delayRedelivery(name: string, message: ReceivedMessage, retry: Extract<Verdict, { kind: 'retry' }>): Promise<void> {
    const options = this.options(name);
    if (message.ReceiptHandle === undefined || (options?.terminateVisibilityTimeout ?? false) !== false) {
      return;
    }
    const attributes = await this.attributes(name).catch(() => ({}) as Readonly<Record<string, string>>);
    const visibility = options?.visibilityTimeout ?? (attributes.VisibilityTimeout === undefined ? undefined : Number(attributes.VisibilityTimeout));
    const seconds = sqsRetryDelaySeconds(retry, Number(message.Attributes?.ApproximateReceiveCount ?? 1), visibility);
    const { service, clientSqs } = await this.service();
    // SqsService's own (private) accessor of the consumer's client and queue: the one sqs-consumer receives and deletes with.
    const { sqs, queueUrl } = (service as unknown as { getQueueInfo(name: string): { sqs: InstanceType<SqsPackages['clientSqs']['SQSClient']>; queueUrl: string } }).getQueueInfo(name);
    await sqs.send(new clientSqs.ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle, VisibilityTimeout: seconds }));
  }

  private async service() {
    this.packages ??= (async () => ({
      nestjsSqs: await loadOptionalPackage('@ssut/nestjs-sqs', '@SqsMessageHandler handlers', () => import('@ssut/nestjs-sqs')),
      clientSqs: await loadOptionalPackage('@aws-sdk/client-sqs', '@SqsMessageHandler handlers', () => import('@aws-sdk/client-sqs')),
    }))();
    const { nestjsSqs, clientSqs } = await this.packages;
    return { service: this.moduleRef.get(nestjsSqs.SqsService, { strict: false }), clientSqs };
  }
}
