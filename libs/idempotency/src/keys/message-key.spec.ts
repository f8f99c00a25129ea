import { IdempotencyKeyError } from '../errors/idempotency.errors.js';
import { readPath, toMessageKey } from './message-key.js';

const source = 'the Idempotency-Key header';

describe('toMessageKey', () => {
  it('accepts a printable key up to 255 characters, and numbers as text', () => {
    expect(toMessageKey('order-1', source)).toBe('order-1');
    expect(toMessageKey('k'.repeat(255), source)).toHaveLength(255);
    expect(toMessageKey(42, source)).toBe('42');
    expect(toMessageKey('ünïcødé ✓', source)).toBe('ünïcødé ✓');
  });

  it('counts characters (Unicode code points) as PostgreSQL does, not UTF-16 code units', () => {
    expect(toMessageKey('😀'.repeat(255), source)).toBe('😀'.repeat(255));
    expect(() => toMessageKey('😀'.repeat(256), source)).toThrow('is 256 characters long; at most 255');
    expect(() => toMessageKey(`${'😀'.repeat(128)}${'k'.repeat(128)}`, source)).toThrow('is 256 characters long');
  });

  it.each([
    [undefined, /is missing/],
    [null, /is missing/],
    ['', /is empty/],
    ['k'.repeat(256), /256 characters long; at most 255/],
    ['a\u0000b', /control characters/],
    ['a\nb', /control characters/],
    ['a\u007fb', /control characters/],
    [{ id: 1 }, /must be a string or a number/],
  ])('refuses %p', (value, reason) => {
    expect(() => toMessageKey(value, source)).toThrow(IdempotencyKeyError);
    expect(() => toMessageKey(value, source)).toThrow(reason);
  });

  it('names where the key was looked for', () => {
    expect(() => toMessageKey(undefined, source)).toThrow(`${source} is missing`);
  });
});

describe('readPath', () => {
  it('reads nested values and answers undefined for missing segments', () => {
    const payload = { id: 'evt_1', data: { account: 'acc-9', n: null } };
    expect(readPath(payload, 'id')).toBe('evt_1');
    expect(readPath(payload, 'data.account')).toBe('acc-9');
    expect(readPath(payload, 'data.n.deeper')).toBeUndefined();
    expect(readPath(payload, 'nothing.here')).toBeUndefined();
    expect(readPath(undefined, 'id')).toBeUndefined();
    expect(readPath('text', 'id')).toBeUndefined();
  });
});
