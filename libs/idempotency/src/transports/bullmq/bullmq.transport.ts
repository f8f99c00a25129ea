import { type ExecutionContext, Injectable, Logger, type Type } from '@nestjs/common';
import type { FailureAnswer, InboundMessage, MessageTransport, ProviderHandlerKind, Verdict } from '../message-transport.js';
import { failureOutcomes, transportMessages } from '../transport.messages.js';

/** The metadata `@Processor()` of `@nestjs/bullmq` sets on a processor class (its queue's name). @internal */
export const PROCESSOR_METADATA = 'bullmq:processor_metadata';

/** What the module reads of a BullMQ `Job`, the first argument of `WorkerHost.process`. */
interface BullmqJob {
  readonly id?: string;
  readonly name: string;
  readonly queueName: string;
  readonly data: unknown;
  /** When the job was added, in ms since the epoch; kept through its retries and stalls. */
  readonly timestamp?: number;
  /** The attempts that failed before this one. */
  readonly attemptsMade: number;
  readonly opts: { readonly attempts?: number };
}

/**
 * Fails a job at once, whatever `attempts` it has left: BullMQ's worker recognises an error by
 * this name as its own `UnrecoverableError` (`Job.shouldRetryJob`), without the module loading
 * `bullmq`.
 */
class JobFailedForGood extends Error {
  override readonly name = 'UnrecoverableError';
}

/**
 * BullMQ through `@nestjs/bullmq`: a processor's `WorkerHost.process(job)`, which BullMQ calls
 * without Nest's interceptors, so each call enters the claim core through the provider path.
 * The key is the job id: a producer's custom `jobId` as it is, else BullMQ's own numbered id with
 * the time the job was added (see `jobKey`); the payload is `job.data`. BullMQ settles the job by
 * the handler's answer: a return (a duplicate's
 * recorded one included) completes it, a throw leaves it to the job's `attempts` and `backoff`;
 * a job that can never succeed (no usable key, a key reused with another payload) fails at once.
 * @internal
 */
@Injectable()
export class BullmqTransport implements MessageTransport {
  readonly name = 'bullmq';
  readonly messageIdSource = 'the BullMQ job id';
  private readonly logger = new Logger('Idempotency');

  read(context: ExecutionContext): InboundMessage | undefined {
    if (context.getType<string>() !== this.name) {
      return undefined;
    }
    const job = context.getArgByIndex<BullmqJob>(0);
    return {
      payload: job.data,
      messageId: jobKey(job),
      header: () => undefined,
      settle: (verdict) => this.settle(job, verdict),
    };
  }

  private settle(job: BullmqJob, verdict: Verdict): FailureAnswer | undefined {
    if (verdict.kind === 'ack') {
      return undefined;
    }
    const attempt = job.attemptsMade + 1;
    const maxAttempts = Math.max(job.opts.attempts ?? 1, 1);
    const failed = (outcome: string) => transportMessages.deliveryFailed({ transport: this.name, messageId: job.id, ...verdict, outcome, cause: verdict.reason });
    if (verdict.kind === 'dead-letter') {
      this.logger.error(failed(failureOutcomes.failedForGood(attempt, maxAttempts)));
      return { error: new JobFailedForGood(verdict.reason) };
    }
    if (attempt >= maxAttempts) {
      this.logger.error(failed(failureOutcomes.failedForGood(attempt, maxAttempts)));
    } else {
      this.logger.warn(failed(failureOutcomes.leftToJobAttempts(attempt, maxAttempts)));
    }
    return undefined;
  }
}

/**
 * A job's default key. A producer's custom `jobId` is the key as it is. BullMQ's own id is a
 * counter per queue that starts again at 1 when the queue is obliterated or Redis loses its
 * data, so it is qualified by the time the job was added (`42@1764633600000`): a job numbered
 * again is a new message, while the job's own retries and stalls keep its key. BullMQ refuses
 * custom ids that are integers, so an integer id is always its own.
 */
function jobKey(job: BullmqJob): string | undefined {
  const numbered = job.id !== undefined && job.timestamp !== undefined && String(Number.parseInt(job.id, 10)) === job.id;
  return numbered ? `${job.id}@${job.timestamp}` : job.id;
}

/**
 * BullMQ processors: the `process` method of a class with `@Processor()`, whose default consumer
 * is `bullmq <queue>`.
 * @internal
 */
export const BULLMQ_PROCESSORS: ProviderHandlerKind = {
  transport: 'bullmq',
  contract(target: Type, methodName: string): string | undefined {
    const processor = Reflect.getMetadata(PROCESSOR_METADATA, target) as { readonly name?: string } | undefined;
    return processor && methodName === 'process' ? `bullmq ${processor.name}` : undefined;
  },
  calls: BullmqTransport,
};
