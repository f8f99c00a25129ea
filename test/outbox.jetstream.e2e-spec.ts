import { natsAvailable } from './support/brokers.js';
import { describeOutbox } from './support/outbox-suite.js';

/** The transactional outbox end to end, to NATS JetStream (test/support/outbox-suite.ts). */
describeOutbox('jetstream', await natsAvailable());
