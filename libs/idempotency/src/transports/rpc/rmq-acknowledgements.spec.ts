import type { RmqContext } from '@nestjs/microservices';
import { RmqAcknowledgements } from './rmq-acknowledgements.js';

/** A channel that only records what it was told: the settlement logic is pure bookkeeping. */
function delivery(headers: Record<string, unknown> = {}) {
  const calls: string[] = [];
  const message = { properties: { headers } };
  const channel = {
    ack: () => calls.push('ack'),
    nack: (_: unknown, __: boolean, requeue: boolean) => calls.push(requeue ? 'requeue' : 'dead-letter'),
  };
  const context = { getMessage: () => message, getChannelRef: () => channel, getPattern: () => 'p' } as unknown as RmqContext;
  return { calls, context };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('RmqAcknowledgements', () => {
  let acknowledgements: RmqAcknowledgements;
  beforeEach(() => {
    acknowledgements = new RmqAcknowledgements();
    Object.assign(acknowledgements, { logger: { log() {}, warn() {}, error() {} } });
  });

  it('acks a message once, after every handler of it settled', async () => {
    const { calls, context } = delivery();
    const first = acknowledgements.join(context);
    const second = acknowledgements.join(context);
    first({ kind: 'ack' });
    first({ kind: 'ack' });
    await turn();
    expect(calls).toEqual([]);
    second({ kind: 'ack' });
    await turn();
    expect(calls).toEqual(['ack']);
  });

  it('dead-lettering wins over a retry, and a retry over an ack', async () => {
    const a = delivery();
    const [x, y, z] = [acknowledgements.join(a.context), acknowledgements.join(a.context), acknowledgements.join(a.context)];
    x({ kind: 'ack' });
    y({ kind: 'retry', attemptKey: 'k', maxAttempts: 5, reason: 'boom' });
    z({ kind: 'dead-letter', reason: 'no key' });
    const b = delivery();
    const [u, v] = [acknowledgements.join(b.context), acknowledgements.join(b.context)];
    u({ kind: 'ack' });
    v({ kind: 'retry', attemptKey: 'k2', maxAttempts: 5, reason: 'boom' });
    await turn();
    expect(a.calls).toEqual(['dead-letter']);
    expect(b.calls).toEqual(['requeue']);
  });

  it('requeues until the attempts are spent, then dead-letters', async () => {
    const outcomes = [];
    for (let i = 0; i < 3; i++) {
      const { calls, context } = delivery();
      acknowledgements.join(context)({ kind: 'retry', attemptKey: 'k', maxAttempts: 3, reason: 'boom' });
      await turn();
      outcomes.push(...calls);
    }
    expect(outcomes).toEqual(['requeue', 'requeue', 'dead-letter']);
  });

  it("trusts the queue's x-delivery-count when it has one", async () => {
    const { calls, context } = delivery({ 'x-delivery-count': 4 });
    acknowledgements.join(context)({ kind: 'retry', attemptKey: 'fresh', maxAttempts: 5, reason: 'boom' });
    await turn();
    expect(calls).toEqual(['dead-letter']);
  });

  it('lets shutdown wait until the handlers in flight settled', async () => {
    const { calls, context } = delivery();
    const settle = acknowledgements.join(context);
    let drained = false;
    const shutdown = acknowledgements.beforeApplicationShutdown().then(() => (drained = true));
    await turn();
    expect(drained).toBe(false);
    settle({ kind: 'ack' });
    await shutdown;
    expect(calls).toEqual(['ack']);
  });
});
