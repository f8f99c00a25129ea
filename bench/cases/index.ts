import type { BenchCase } from './bench-case.js';
import { bullmqProcessor } from './bullmq-processor.case.js';
import { databaseLimit } from './database-limit.case.js';
import { dataLayers } from './data-layers.case.js';
import { golevelupRabbitmqConsumer } from './golevelup-rabbitmq-consumer.case.js';
import { health } from './health.case.js';
import { httpDuplicates } from './http-duplicates.case.js';
import { httpFirstDeliveries } from './http-first-deliveries.case.js';
import { instructions } from './instructions.case.js';
import { latency } from './latency.case.js';
import { leaseMode } from './lease-mode.case.js';
import { memory } from './memory.case.js';
import { outboxCase } from './outbox.case.js';
import { natsJetStreamConsumer } from './nats-jetstream-consumer.case.js';
import { peer } from './peer.case.js';
import { productionOptions } from './production-options.case.js';
import { purge } from './purge.case.js';
import { rabbitmqConsumer } from './rabbitmq-consumer.case.js';
import { sqsConsumer } from './sqs-consumer.case.js';

/** The cases `npm run bench` measures, in the order it runs them. Add a case here, one file each. */
export const CASES: readonly BenchCase[] = [httpFirstDeliveries, httpDuplicates, databaseLimit, rabbitmqConsumer, purge, health, memory, leaseMode, latency, peer, productionOptions, bullmqProcessor, natsJetStreamConsumer, sqsConsumer, golevelupRabbitmqConsumer, instructions, dataLayers, outboxCase];

