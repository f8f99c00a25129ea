import { rabbitMqAvailable } from './support/brokers.js';
import { describeOutbox } from './support/outbox-suite.js';

/** The transactional outbox end to end on MariaDB, to RabbitMQ (test/support/outbox-suite.ts): the producer and the consumer on TypeORM's `mariadb` data source. */
describeOutbox('rabbitmq', await rabbitMqAvailable(), 'mariadb');
