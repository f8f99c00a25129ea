import { failureOutcomes, transportMessages } from './transport.messages.js';

describe("a failed delivery's log line", () => {
  const line = (messageId: unknown, key: string | undefined) =>
    transportMessages.deliveryFailed({ transport: 'rabbitmq', consumer: 'payments', messageId, key, outcome: failureOutcomes.deadLettered(), cause: 'boom' });

  it('names the message by its broker id, and by its key where that differs', () => {
    expect(line('m-1', 'm-1')).toBe("rabbitmq message 'm-1' for 'payments' was rejected to the dead-letter path: boom");
    expect(line('job-7', 'order-7')).toBe("rabbitmq message 'job-7' (key 'order-7') for 'payments' was rejected to the dead-letter path: boom");
    expect(line(undefined, 'order-7')).toBe("rabbitmq message with key 'order-7' for 'payments' was rejected to the dead-letter path: boom");
    expect(line(undefined, undefined)).toBe("rabbitmq message without id for 'payments' was rejected to the dead-letter path: boom");
  });

  it('says the attempt and what became of the message', () => {
    expect(failureOutcomes.requeued(2, 5, 2_000)).toBe('failed (attempt 2 of 5) and is requeued in 2000 ms');
    expect(failureOutcomes.terminated(3)).toBe('was terminated (JetStream will not redeliver it): it failed 3 times; last error');
    expect(failureOutcomes.failedForGood(1, 5)).toBe('failed for good, without further attempts (attempt 1 of 5)');
    expect(failureOutcomes.failedForGood(3, 3)).toBe('failed for good: it failed 3 times; last error');
  });
});
