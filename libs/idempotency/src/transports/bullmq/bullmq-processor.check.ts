import { Injectable, Logger, type OnModuleInit, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { IdempotencyExplorer } from '../../discovery/idempotency.explorer.js';
import { IdempotencyOptionsError } from '../../errors/idempotency.errors.js';
import { bullmqProcessorMessages } from './bullmq-processor.messages.js';
import { BULLMQ_PROCESSORS, PROCESSOR_METADATA } from './bullmq.transport.js';

/** The metadata `@Processor(queue, workerOptions)` of `@nestjs/bullmq` sets on a processor class (its `WorkerOptions`). @internal */
export const WORKER_METADATA = 'bullmq:worker_metadata';

/** The token of a queue `BullModule.registerQueue()` provides (`getQueueToken(name)` of `@nestjs/bullmq`). @internal */
export const queueToken = (queue: string) => `BullQueue_${queue}`;

/** What the check reads of a processor's `WorkerOptions` and of a BullMQ `Queue`. */
interface WorkerOptions {
  readonly maxStalledCount?: number;
}
interface Queue {
  readonly defaultJobOptions?: { readonly attempts?: number };
}

/**
 * Checks the BullMQ settings of each idempotent processor at start-up, reading `@nestjs/bullmq`'s
 * metadata and providers without loading it. Refuses `maxStalledCount: 0`, with which the
 * stalled-job check fails the job of a worker that died before its commit, so its effect never
 * happens. Warns when the processor's queue, where this application registers it, gives jobs one
 * attempt (BullMQ's default): a job added without its own `attempts` then fails for good on a
 * passing error. The check cannot see the options a producer passes to `add()`.
 */
@Injectable()
export class BullmqProcessorCheck implements OnModuleInit {
  private readonly logger = new Logger('Idempotency');

  constructor(
    private readonly moduleRef: ModuleRef,
    private readonly explorer: IdempotencyExplorer,
  ) {}

  onModuleInit(): void {
    for (const { handler, provider } of this.explorer.discovered()) {
      if (provider?.kind !== BULLMQ_PROCESSORS) {
        continue;
      }
      const processor = provider.wrapper.metatype as Type;
      const queue = (Reflect.getMetadata(PROCESSOR_METADATA, processor) as { readonly name: string }).name;
      const worker = Reflect.getMetadata(WORKER_METADATA, processor) as WorkerOptions | undefined;
      if (worker?.maxStalledCount === 0) {
        throw new IdempotencyOptionsError(bullmqProcessorMessages.stalledJobsFailed(handler.name, queue));
      }
      const registered = this.queue(queue);
      if (registered && (registered.defaultJobOptions?.attempts ?? 1) <= 1) {
        this.logger.warn(bullmqProcessorMessages.singleAttempt(handler.name, queue));
      }
    }
  }

  /** The queue as this application registered it; undefined where it does not (a worker-only application). */
  private queue(name: string): Queue | undefined {
    try {
      return this.moduleRef.get<Queue>(queueToken(name), { strict: false });
    } catch {
      return undefined;
    }
  }
}
