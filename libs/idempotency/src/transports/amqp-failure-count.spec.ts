import type { Verdict } from './message-transport.js';
import { AmqpFailureCount } from './amqp-failure-count.js';

const retry = (attemptKey: string, maxAttempts = 5, retryDelayMs = 1_000): Extract<Verdict, { kind: 'retry' }> => ({
  kind: 'retry',
  attemptKey,
  maxAttempts,
  retryDelayMs,
  consumer: 'c',
  key: attemptKey,
  reason: 'boom',
});
const delivery = (deliveryCount?: number) => ({ properties: { headers: deliveryCount === undefined ? {} : { 'x-delivery-count': deliveryCount } } });

describe('AmqpFailureCount', () => {
  it('doubles the delay with each failure of a message, then says its attempts are spent', () => {
    const failures = new AmqpFailureCount();
    const answers = [1, 2, 3, 4].map(() => failures.fail(retry('k', 4), delivery()));
    expect(answers).toEqual([
      { attempt: 1, exhausted: false, delayMs: 1_000 },
      { attempt: 2, exhausted: false, delayMs: 2_000 },
      { attempt: 3, exhausted: false, delayMs: 4_000 },
      { attempt: 4, exhausted: true },
    ]);
  });

  it('starts over for a message whose attempts were spent, and counts each message apart', () => {
    const failures = new AmqpFailureCount();
    failures.fail(retry('k', 2), delivery());
    expect(failures.fail(retry('k', 2), delivery())).toEqual({ attempt: 2, exhausted: true });
    expect(failures.fail(retry('k', 2), delivery())).toEqual({ attempt: 1, exhausted: false, delayMs: 1_000 });
    expect(failures.fail(retry('other', 2), delivery())).toEqual({ attempt: 1, exhausted: false, delayMs: 1_000 });
  });

  it("takes the quorum queue's delivery count where it is ahead of this process's count", () => {
    const failures = new AmqpFailureCount();
    expect(failures.fail(retry('k', 10), delivery(5))).toEqual({ attempt: 6, exhausted: false, delayMs: 32_000 });
    expect(failures.fail(retry('k', 10), delivery(9))).toEqual({ attempt: 10, exhausted: true });
  });

  it('caps the delay at 64 times the retry delay', () => {
    const failures = new AmqpFailureCount();
    expect(failures.fail(retry('k', 100, 10), delivery(20))).toEqual({ attempt: 21, exhausted: false, delayMs: 640 });
  });

  it('forgets the oldest failures beyond 10 000 messages', () => {
    const failures = new AmqpFailureCount();
    for (let message = 0; message <= 10_000; message++) {
      failures.fail(retry(`m${message}`), delivery());
    }
    expect(failures.fail(retry('m0'), delivery())).toMatchObject({ attempt: 1 });
    expect(failures.fail(retry('m2'), delivery())).toMatchObject({ attempt: 2 });
  });
});
