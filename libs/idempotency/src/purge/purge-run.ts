export type { PurgeOutcome, PurgeRun } from '../errors/idempotency-purge.error.js';
