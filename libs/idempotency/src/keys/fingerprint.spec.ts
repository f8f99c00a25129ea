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

  it('stays what earlier versions stored, so a retry after an upgrade still matches its record', () => {
    const payload = { method: 'POST', url: '/credits?x=1', body: { b: 1, a: [1, null, 'x', { d: new Date(0), c: undefined }], é: true } };
    expect(fingerprint(payload)).toBe('d2d705be9b789500e08e803d1ea619ea73f9b75cc8812f664641225afdb4953f');
  });

  it('treats absent and undefined fields alike, and handles empty payloads', () => {
    expect(fingerprint({ a: 1, b: undefined })).toBe(fingerprint({ a: 1 }));
    expect(fingerprint(undefined)).toBe(fingerprint(null));
    expect(fingerprint(undefined)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('hashes bytes as bytes, fast, and tells byte strings apart', () => {
    const megabyte = Buffer.alloc(1024 * 1024, 7);
    const started = performance.now();
    const hashed = fingerprint({ url: '/upload', body: megabyte });
    const elapsedMs = performance.now() - started;
    console.log(`fingerprint of a 1 MiB Buffer body: ${elapsedMs.toFixed(2)} ms`);
    expect(hashed).toBe(fingerprint({ url: '/upload', body: Buffer.alloc(1024 * 1024, 7) }));
    expect(hashed).not.toBe(fingerprint({ url: '/upload', body: Buffer.concat([megabyte.subarray(1), Buffer.from([8])]) }));
    expect(fingerprint(new Uint8Array([1, 2, 3]))).toBe(fingerprint(Buffer.from([1, 2, 3])));
    expect(fingerprint(Buffer.from('ab'))).not.toBe(fingerprint('ab'));
  });

  it.each([
    ['dates', new Date('2026-12-03T00:00:00Z'), new Date('2026-12-04T00:00:00Z')],
    ['maps', new Map([['a', 1]]), new Map([['a', 2]])],
    ['sets', new Set([1, 2]), new Set([1, 3])],
    ['bigints', 1n, 2n],
  ])('tells %s apart by their values, never as {}', (_, one, other) => {
    expect(fingerprint({ value: one })).not.toBe(fingerprint({ value: other }));
    expect(fingerprint({ value: one })).not.toBe(fingerprint({ value: {} }));
  });

  it('ignores the insertion order of maps and sets', () => {
    expect(fingerprint(new Map([['a', 1], ['b', 2]]))).toBe(fingerprint(new Map([['b', 2], ['a', 1]])));
    expect(fingerprint(new Set(['x', 'y']))).toBe(fingerprint(new Set(['y', 'x'])));
  });
});
