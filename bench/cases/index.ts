import type { BenchCase } from './bench-case.js';
import { bullmqProcessor, golevelupRabbitmqConsumer, kafkaConsumer, natsJetStreamConsumer, rabbitmqConsumer, sqsConsumer } from './consumers.case.js';
import { databaseLimit } from './database-limit.case.js';
import { dataLayers } from './data-layers.case.js';
import { health } from './health.case.js';
import { httpDuplicates } from './http-duplicates.case.js';
import { httpFirstDeliveries } from './http-first-deliveries.case.js';
import { instructions } from './instructions.case.js';
import { latency } from './latency.case.js';
import { leaseMode } from './lease-mode.case.js';
import { mariaDb } from './mariadb.case.js';
import { memory } from './memory.case.js';
import { outboxCase } from './outbox.case.js';
import { peer } from './peer.case.js';
import { productionOptions } from './production-options.case.js';
import { purge } from './purge.case.js';

/**
 * The cases `npm run bench` measures, in the order it runs them, which is their numbering. Add a case
 * here, one file each; a consumer case is a row of `consumers.case.ts`.
 */
export const CASES: readonly BenchCase[] = [httpFirstDeliveries, httpDuplicates, databaseLimit, rabbitmqConsumer, purge, health, memory, leaseMode, latency, peer, productionOptions, bullmqProcessor, natsJetStreamConsumer, sqsConsumer, golevelupRabbitmqConsumer, instructions, dataLayers, outboxCase, kafkaConsumer, mariaDb];
