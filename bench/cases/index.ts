import type { BenchCase, PendingCase } from './bench-case.js';
import { databaseLimit } from './database-limit.case.js';
import { httpDuplicates } from './http-duplicates.case.js';
import { httpFirstDeliveries } from './http-first-deliveries.case.js';
import { memory } from './memory.case.js';
import { rabbitmqConsumer } from './rabbitmq-consumer.case.js';

/** The cases `npm run bench` measures, in the order it runs them. Add a case here, one file each. */
export const CASES: readonly BenchCase[] = [httpFirstDeliveries, httpDuplicates, databaseLimit, rabbitmqConsumer, memory];

/**
 * Cases of issue 5 that wait for a feature not on this branch yet. They are reported as not yet
 * measured; each becomes a `<name>.case.ts` in this folder when its feature lands.
 */
export const PENDING_CASES: readonly PendingCase[] = [
  { id: 5, title: 'Purge', waitingFor: 'the purge service (purgeNow())' },
  { id: 6, title: 'Health', waitingFor: 'IdempotencyHealthIndicator' },
];
