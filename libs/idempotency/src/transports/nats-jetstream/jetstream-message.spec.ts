import type { Logger } from '@nestjs/common';
import type { Verdict } from '../message-transport.js';
import { type JetStreamMessage, jetStreamMessageOf, settleJetStreamMessage } from './jetstream-message.js';

/** A message that only records how it was settled: the settlement is pure bookkeeping. */
function delivered(info: JetStreamMessage['info']) {
  const calls: string[] = [];
  const message: JetStreamMessage = {
    subject: 'orders.placed',
    info,
    ack: () => calls.push('ack'),
    nak: (delayMs) => calls.push(`nak ${delayMs}`),
    term: () => calls.push('term'),
  };
  return { calls, message };
}

const logger = { error() {}, warn() {} } as unknown as Logger;
const retry = (maxAttempts: number): Verdict => ({ kind: 'retry', attemptKey: 'k', maxAttempts, retryDelayMs: 1_000, consumer: 'orders.placed', key: 'k', reason: 'boom' });

describe('settleJetStreamMessage', () => {
  it('acks, and terms what can never succeed', () => {
    const acked = delivered({ redeliveryCount: 1 });
    settleJetStreamMessage(acked.message, 'm-1', { kind: 'ack' }, logger);
    const dead = delivered({ redeliveryCount: 1 });
    settleJetStreamMessage(dead.message, 'm-1', { kind: 'dead-letter', consumer: 'orders.placed', key: undefined, reason: 'no key' }, logger);
    expect([acked.calls, dead.calls]).toEqual([['ack'], ['term']]);
  });

  it("naks with a delay that doubles with the broker's delivery count, then terms when the attempts are spent", () => {
    const settled = [1, 2, 3, 4].map((count) => {
      const { calls, message } = delivered({ redeliveryCount: count });
      settleJetStreamMessage(message, 'm-1', retry(4), logger);
      return calls[0];
    });
    expect(settled).toEqual(['nak 1000', 'nak 2000', 'nak 4000', 'term']);
  });

  it("reads the v3 client's deliveryCount too", () => {
    const { calls, message } = delivered({ deliveryCount: 5 });
    settleJetStreamMessage(message, 'm-1', retry(5), logger);
    expect(calls).toEqual(['term']);
  });

  it('swallows a settlement the connection lost: the broker redelivers after ack_wait', () => {
    const { message } = delivered({ redeliveryCount: 1 });
    const closed = { ...message, ack: () => { throw new Error('connection closed'); } };
    expect(() => settleJetStreamMessage(closed, 'm-1', { kind: 'ack' }, logger)).not.toThrow();
  });
});

describe('jetStreamMessageOf', () => {
  it("reads the plugin's NatsJetStreamContext only", () => {
    const { message } = delivered({ redeliveryCount: 1 });
    class NatsJetStreamContext {
      constructor(readonly message: unknown) {}
    }
    class NatsContext {
      constructor(readonly message: unknown) {}
    }
    expect(jetStreamMessageOf(new NatsJetStreamContext(message))).toBe(message);
    expect(jetStreamMessageOf(new NatsContext(message))).toBeUndefined();
    expect(jetStreamMessageOf(new NatsJetStreamContext({ data: 'core NATS message' }))).toBeUndefined();
    expect(jetStreamMessageOf(undefined)).toBeUndefined();
  });
});
