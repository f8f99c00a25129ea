import { kafkaBrokerAvailable } from './support/kafka-broker.js';
import { describeOutbox } from './support/outbox-suite.js';

/** The transactional outbox end to end, to Kafka (test/support/outbox-suite.ts). */
describeOutbox('kafka', kafkaBrokerAvailable());
