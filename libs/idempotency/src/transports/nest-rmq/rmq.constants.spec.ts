import { Transport } from '@nestjs/microservices';
import { RMQ_TRANSPORT } from './rmq.constants.js';

/** Nest's transport id that the module reads without importing it, checked against the installed Nest. */
describe("Nest's RabbitMQ transport id", () => {
  it('is the value the RabbitMQ consumer check compares servers and patterns with', () => {
    expect(Transport.RMQ).toBe(RMQ_TRANSPORT);
  });
});
