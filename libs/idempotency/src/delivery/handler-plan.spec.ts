import type { ExecutionContext } from '@nestjs/common';
import type { ResolvedHandler } from './resolved-handler.js';
import { requestBuilder } from './handler-plan.js';

const NO_FORMER_NAME = { formerConsumer: undefined };

describe("requestBuilder, a delivery's fingerprint", () => {
  const handler = { consumer: 'c', retentionMs: 1000, recordErrors: new Set(), fingerprint: 'request' } as unknown as ResolvedHandler;
  const fingerprintOf = (request: unknown) =>
    requestBuilder<unknown>(handler, { key: () => 'k', request: () => request, defaultInFlight: 'reject' }, NO_FORMER_NAME)({} as ExecutionContext, {}, 'default').fingerprint;

  it("is taken of the entry's request, and is null for a message that has none to take it of", () => {
    expect(fingerprintOf({ method: 'POST', url: '/a', body: { cents: 1 } })).toMatch(/^[0-9a-f]{64}$/);
    expect(fingerprintOf({ method: 'POST', url: '/a', body: { cents: 2 } })).not.toBe(fingerprintOf({ method: 'POST', url: '/a', body: { cents: 1 } }));
    expect(fingerprintOf(undefined)).toBeNull();
  });
});

describe("requestBuilder, a fingerprint bound to the caller", () => {
  const handler = { consumer: 'c', retentionMs: 1000, recordErrors: new Set(), fingerprint: 'request' } as unknown as ResolvedHandler;
  const fingerprintFor = (user: string | undefined) =>
    requestBuilder<unknown>(handler, { key: () => 'k', request: () => ({ body: 1 }), caller: () => user, defaultInFlight: 'reject' }, NO_FORMER_NAME)({} as ExecutionContext, {}, 'default').fingerprint;

  it('differs from one caller to another, and is the same for one caller', () => {
    expect(fingerprintFor('alice')).toBe(fingerprintFor('alice'));
    expect(fingerprintFor('alice')).not.toBe(fingerprintFor('bob'));
    expect(fingerprintFor(undefined)).not.toBe(fingerprintFor('alice'));
  });
});

describe("requestBuilder, the consumer's former name", () => {
  const handler = { consumer: 'POST /credits', retentionMs: 1000, recordErrors: new Set(), fingerprint: false } as unknown as ResolvedHandler;

  it('is read from the plan at each request: the name the store was found to hold at start-up, after the plan was compiled', () => {
    const names: { formerConsumer: string | undefined } = { formerConsumer: undefined };
    const request = requestBuilder<unknown>(handler, { key: () => 'k', defaultInFlight: 'reject' }, names);
    expect(request({} as ExecutionContext, {}, 'default').formerConsumer).toBeUndefined();
    names.formerConsumer = 'CreditsController.grant';
    expect(request({} as ExecutionContext, {}, 'default')).toMatchObject({ consumer: 'POST /credits', formerConsumer: 'CreditsController.grant', key: 'k' });
  });
});
