import type { ExecutionContext, Type } from '@nestjs/common';
import type { ResolvedHandler } from '../decorators/idempotency-metadata.accessor.js';
import { HandlerPlans, requestBuilder } from './handler-plan.js';

class Base {
  grant(): void {}
}
class First extends Base {}
class Second extends Base {}

describe('HandlerPlans, the plans of one entry by the method Nest calls', () => {
  const grant = Base.prototype.grant;

  it('finds a plan by its method and class, and none for a method it was not given', () => {
    const plans = new HandlerPlans<string>();
    expect(plans.set(First as Type, grant, 'first')).toBe('first');
    expect(plans.get(First as Type, grant)).toBe('first');
    expect(plans.get(First as Type, () => undefined)).toBeUndefined();
  });

  it('a method inherited by two controllers has a plan for each', () => {
    const plans = new HandlerPlans<string>();
    plans.set(First as Type, grant, 'first');
    expect(plans.get(Second as Type, grant)).toBeUndefined();
    plans.set(Second as Type, grant, 'second');
    expect(plans.get(First as Type, grant)).toBe('first');
    expect(plans.get(Second as Type, grant)).toBe('second');
  });

  it('a bound copy of a method is its own key', () => {
    const plans = new HandlerPlans<string>();
    const bound = grant.bind(new First());
    plans.set(First as Type, grant, 'first');
    expect(plans.get(First as Type, bound)).toBeUndefined();
    plans.set(First as Type, bound, 'first');
    expect(plans.get(First as Type, bound)).toBe('first');
  });
});

describe("requestBuilder, a delivery's fingerprint", () => {
  const handler = { consumer: 'c', retentionMs: 1000, recordErrors: new Set(), fingerprint: 'request' } as unknown as ResolvedHandler;
  const fingerprintOf = (request: unknown) =>
    requestBuilder<unknown>(handler, { key: () => 'k', request: () => request, defaultInFlight: 'reject' })({} as ExecutionContext, {}, 'default').fingerprint;

  it("is taken of the entry's request, and is null for a message that has none to take it of", () => {
    expect(fingerprintOf({ method: 'POST', url: '/a', body: { cents: 1 } })).toMatch(/^[0-9a-f]{64}$/);
    expect(fingerprintOf({ method: 'POST', url: '/a', body: { cents: 2 } })).not.toBe(fingerprintOf({ method: 'POST', url: '/a', body: { cents: 1 } }));
    expect(fingerprintOf(undefined)).toBeNull();
  });
});

describe("requestBuilder, a fingerprint bound to the caller", () => {
  const handler = { consumer: 'c', retentionMs: 1000, recordErrors: new Set(), fingerprint: 'request' } as unknown as ResolvedHandler;
  const fingerprintFor = (user: string | undefined) =>
    requestBuilder<unknown>(handler, { key: () => 'k', request: () => ({ body: 1 }), caller: () => user, defaultInFlight: 'reject' })({} as ExecutionContext, {}, 'default').fingerprint;

  it('differs from one caller to another, and is the same for one caller', () => {
    expect(fingerprintFor('alice')).toBe(fingerprintFor('alice'));
    expect(fingerprintFor('alice')).not.toBe(fingerprintFor('bob'));
    expect(fingerprintFor(undefined)).not.toBe(fingerprintFor('alice'));
  });
});
