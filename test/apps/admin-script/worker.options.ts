import type { IdempotencyModuleOptions } from 'nestjs-idempotent-consumer';

/** The service's options for IdempotencyModule, kept in a file of their own that its incident scripts import too. */
export const idempotencyOptions: IdempotencyModuleOptions = { retention: '7d', purge: { interval: '200ms' } };

/** Where this worker's queues are: a suite gives names of its own. */
export const WORKER_QUEUES = {
  jobs: process.env.WORKER_JOBS_QUEUE ?? 'worker-jobs',
  bullPrefix: process.env.WORKER_BULL_PREFIX ?? 'bull',
  messages: process.env.WORKER_RABBIT_QUEUE ?? 'worker-messages',
};
