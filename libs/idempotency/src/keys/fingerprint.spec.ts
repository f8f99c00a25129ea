import { fingerprint } from './fingerprint.js';

describe('fingerprint', () => {
  it('is the same for the same payload in any key order', () => {
    expect(fingerprint({ a: 1, b: { c: [1, 2], d: 'x' } })).toBe(fingerprint({ b: { d: 'x', c: [1, 2] }, a: 1 }));
  });

  it('differs when any value, key or array order differs', () => {
    const base = fingerprint({ account: 'acc-9', cents: 500 });
    expect(fingerprint({ account: 'acc-9', cents: 501 })).not.toBe(base);
    expect(fingerprint({ account: 'acc-9', amount: 500 })).not.toBe(base);
    expect(fingerprint([1, 2])).not.toBe(fingerprint([2, 1]));
    expect(fingerprint('500')).not.toBe(fingerprint(500));
  });

  it('treats absent and undefined fields alike, and handles empty payloads', () => {
    expect(fingerprint({ a: 1, b: undefined })).toBe(fingerprint({ a: 1 }));
    expect(fingerprint(undefined)).toBe(fingerprint(null));
    expect(fingerprint(undefined)).toMatch(/^[0-9a-f]{64}$/);
  });
});
