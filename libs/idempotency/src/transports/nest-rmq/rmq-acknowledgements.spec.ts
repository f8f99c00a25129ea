import { jest } from '@jest/globals';
import type { RmqContext } from '@nestjs/microservices';
import type { Verdict } from '../message-transport.js';
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

const retry = (attemptKey: string, maxAttempts = 5): Verdict => ({ kind: 'retry', attemptKey, maxAttempts, retryDelayMs: 1_000, consumer: 'p', key: attemptKey, reason: 'boom' });

describe('RmqAcknowledgements', () => {
  let acknowledgements: RmqAcknowledgements;
  beforeEach(() => {
    jest.useFakeTimers();
    acknowledgements = new RmqAcknowledgements();
    Object.assign(acknowledgements, { logger: { log() {}, warn() {}, error() {} } });
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('acks a message once, after every handler of its pattern settled, however late one joins', async () => {
    const { calls, context } = delivery();
    const first = acknowledgements.join(context, 2);
    first({ kind: 'ack' });
    first({ kind: 'ack' });
    await jest.advanceTimersByTimeAsync(60_000);
    expect(calls).toEqual([]);
    const second = acknowledgements.join(context, 2);
    second({ kind: 'ack' });
    expect(calls).toEqual(['ack']);
  });

  it('settles in the same turn when the count of handlers is unknown (a wildcard pattern)', async () => {
    const { calls, context } = delivery();
    const [first, second] = [acknowledgements.join(context, 0), acknowledgements.join(context, 0)];
    first({ kind: 'ack' });
    await jest.advanceTimersByTimeAsync(0);
    expect(calls).toEqual([]);
    second({ kind: 'ack' });
    await jest.advanceTimersByTimeAsync(0);
    expect(calls).toEqual(['ack']);
  });

  it('dead-lettering wins over a retry, and a retry over an ack', async () => {
    const a = delivery();
    const [x, y, z] = [acknowledgements.join(a.context, 3), acknowledgements.join(a.context, 3), acknowledgements.join(a.context, 3)];
    x({ kind: 'ack' });
    y(retry('k'));
    z({ kind: 'dead-letter', consumer: 'p', key: undefined, reason: 'no key' });
    const b = delivery();
    const [u, v] = [acknowledgements.join(b.context, 2), acknowledgements.join(b.context, 2)];
    u({ kind: 'ack' });
    v(retry('k2'));
    await jest.advanceTimersByTimeAsync(1_000);
    expect(a.calls).toEqual(['dead-letter']);
    expect(b.calls).toEqual(['requeue']);
  });

  it('requeues after a delay that doubles with each failure, then dead-letters when the attempts are spent', async () => {
    const requeuedAfter: number[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      const { calls, context } = delivery();
      acknowledgements.join(context, 1)(retry('k', 4));
      let waited = 0;
      while (calls.length === 0 && waited < 60_000) {
        await jest.advanceTimersByTimeAsync(100);
        waited += 100;
      }
      requeuedAfter.push(calls[0] === 'requeue' ? waited : -1);
    }
    expect(requeuedAfter).toEqual([1_000, 2_000, 4_000, -1]);
  });

  it("trusts the queue's x-delivery-count when it has one", () => {
    const { calls, context } = delivery({ 'x-delivery-count': 4 });
    acknowledgements.join(context, 1)(retry('fresh'));
    expect(calls).toEqual(['dead-letter']);
  });

  it("lets shutdown wait until the handlers in flight settled, and leaves the delayed retries to the channel's close", async () => {
    const waiting = delivery();
    acknowledgements.join(waiting.context, 1)(retry('delayed'));
    const { calls, context } = delivery();
    const settle = acknowledgements.join(context, 1);
    let drained = false;
    const shutdown = acknowledgements.beforeApplicationShutdown().then(() => (drained = true));
    await jest.advanceTimersByTimeAsync(0);
    expect(drained).toBe(false);
    settle({ kind: 'ack' });
    await shutdown;
    expect(calls).toEqual(['ack']);
    await jest.advanceTimersByTimeAsync(60_000);
    expect(waiting.calls).toEqual([]);
  });
});
