import type { BenchCase, PendingCase } from './bench-case.js';
import { databaseLimit } from './database-limit.case.js';
import { health } from './health.case.js';
import { httpDuplicates } from './http-duplicates.case.js';
import { httpFirstDeliveries } from './http-first-deliveries.case.js';
import { memory } from './memory.case.js';
import { purge } from './purge.case.js';

/** The cases `npm run bench` measures, in the order it runs them. Add a case here, one file each. */
export const CASES: readonly BenchCase[] = [httpFirstDeliveries, httpDuplicates, databaseLimit, purge, health, memory];

/**
 * Cases of issue 5 that wait for a feature not on this branch yet. They are reported as not yet
 * measured; each becomes a `<name>.case.ts` in this folder when its feature lands.
 */
export const PENDING_CASES: readonly PendingCase[] = [
  { id: 4, title: 'RabbitMQ consumer', waitingFor: 'the RPC transports (idempotent @EventPattern)' },
];
