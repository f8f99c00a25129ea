import { Processor, WorkerHost } from '@nestjs/bullmq';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Job } from 'bullmq';
import { IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';
import type { DataSource } from 'typeorm';
import { toCreditRequest } from '../../../apps/demo-api/src/credits/credit-request.js';
import { PREFETCH } from './bench-app.module.js';
import { grantCredit } from './credit-grant.js';

/** The BullMQ arms, and the queue of each one's jobs. */
export type ProcessorArm = 'plain' | 'idempotent';
export const PROCESSOR_QUEUES: Record<ProcessorArm, string> = { plain: 'bench-credits-plain', idempotent: 'bench-credits-idempotent' };

/** Workers start paused (the runner fills a queue first) and run as many jobs at once as the RabbitMQ case's prefetch. */
const WORKER_OPTIONS = { concurrency: PREFETCH, autorun: false };

/** The credit handler as a BullMQ processor without the module: its own transaction. */
@Processor(PROCESSOR_QUEUES.plain, WORKER_OPTIONS)
export class PlainCreditsProcessor extends WorkerHost {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    super();
  }

  async process(job: Job): Promise<void> {
    const { account, cents } = toCreditRequest(job.data);
    await this.dataSource.transaction((manager) => grantCredit(manager, account, cents));
  }
}

/** The same handler, exactly once per job id. */
@Processor(PROCESSOR_QUEUES.idempotent, WORKER_OPTIONS)
export class IdempotentCreditsProcessor extends WorkerHost {
  constructor(private readonly idempotency: IdempotencyContext) {
    super();
  }

  @IdempotentHandler()
  async process(job: Job): Promise<void> {
    const { account, cents } = toCreditRequest(job.data);
    await grantCredit(this.idempotency.manager, account, cents);
  }
}
