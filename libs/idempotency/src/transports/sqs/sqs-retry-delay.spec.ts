import { sqsRetryDelaySeconds } from './sqs-retry-delay.js';

describe('sqsRetryDelaySeconds', () => {
  const retry = { kind: 'retry', attemptKey: 'k', maxAttempts: 5, retryDelayMs: 1_000, consumer: 'sqs orders', key: 'k', reason: 'boom' } as const;

  it('doubles the retry delay with each receive, up to 64 times it', () => {
    expect([1, 2, 3, 4, 7, 8, 20].map((receives) => sqsRetryDelaySeconds(retry, receives, undefined))).toEqual([1, 2, 4, 8, 64, 64, 64]);
  });

  it("starts from the visibility timeout when it is longer, so a retry never comes sooner than SQS's own", () => {
    expect([1, 2, 3].map((receives) => sqsRetryDelaySeconds(retry, receives, 30))).toEqual([30, 60, 120]);
    expect(sqsRetryDelaySeconds({ ...retry, retryDelayMs: 45_000 }, 1, 30)).toBe(45);
  });

  it('rounds up to whole seconds and stops at the 12 hours SQS allows', () => {
    expect(sqsRetryDelaySeconds({ ...retry, retryDelayMs: 1_500 }, 1, undefined)).toBe(2);
    expect(sqsRetryDelaySeconds({ ...retry, retryDelayMs: 3_600_000 }, 7, undefined)).toBe(43_200);
  });

  it('takes a message without a receive count as received once', () => {
    expect(sqsRetryDelaySeconds(retry, 0, undefined)).toBe(1);
  });
});
