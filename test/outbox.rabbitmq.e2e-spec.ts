import { rabbitMqAvailable } from './support/brokers.js';
import { describeOutbox } from './support/outbox-suite.js';

/** The transactional outbox end to end, to RabbitMQ (test/support/outbox-suite.ts). */
describeOutbox('rabbitmq', await rabbitMqAvailable());
