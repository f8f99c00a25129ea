import type { INestApplication } from '@nestjs/common';
import { CREDIT_GRANT_MAX_ATTEMPTS } from '../credits/credit-messages.controller.js';
import { consumeCredits, creditQueueFromEnvironment } from './rabbitmq.js';

/** Refused declarations are refused before any connection is made: no broker answers this. */
const UNREACHABLE = 'amqp://guest:guest@127.0.0.1:1';
const app = {} as INestApplication;

describe('the demo queue settings', () => {
  it('default to the classic queue credits, with no delivery limit', () => {
    expect(creditQueueFromEnvironment({})).toEqual({ name: 'credits', type: 'classic', deliveryLimit: undefined });
  });

  it('read RABBITMQ_QUEUE, RABBITMQ_QUEUE_TYPE and RABBITMQ_DELIVERY_LIMIT', () => {
    expect(creditQueueFromEnvironment({ RABBITMQ_QUEUE: 'grants', RABBITMQ_QUEUE_TYPE: 'quorum', RABBITMQ_DELIVERY_LIMIT: '8' })).toEqual({
      name: 'grants',
      type: 'quorum',
      deliveryLimit: 8,
    });
  });

  it('refuse an unknown queue type, naming the ones there are', () => {
    expect(() => creditQueueFromEnvironment({ RABBITMQ_QUEUE_TYPE: 'stream' })).toThrow("RABBITMQ_QUEUE_TYPE is 'stream': set it to 'classic' or 'quorum'");
  });

  it("refuse a quorum queue's delivery limit below the handler's maxAttempts, which would end failing messages before the module's retries", async () => {
    await expect(consumeCredits(app, UNREACHABLE, { name: 'q', type: 'quorum', deliveryLimit: CREDIT_GRANT_MAX_ATTEMPTS - 1 })).rejects.toThrow(
      `make it a whole number of at least ${CREDIT_GRANT_MAX_ATTEMPTS}`,
    );
    await expect(consumeCredits(app, UNREACHABLE, { name: 'q', type: 'quorum', deliveryLimit: Number('five') })).rejects.toThrow('is NaN');
  });

  it('refuse a delivery limit on a classic queue, which would ignore it', async () => {
    await expect(consumeCredits(app, UNREACHABLE, { name: 'q', type: 'classic', deliveryLimit: 10 })).rejects.toThrow('needs a quorum queue');
  });
});
