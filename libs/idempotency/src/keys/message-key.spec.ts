import type { ExecutionContext } from '@nestjs/common';
import { IdempotencyKeyError, IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { keyAbsence, type KeyLookup, keyReader, readPath, toKeySources, toMessageKey } from './message-key.js';

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

describe('key sources', () => {
  const context = {} as ExecutionContext;
  const lookups: KeyLookup<Record<string, unknown>>[] = [
    { where: "'idempotencyKey' in the arguments", find: (_context, source) => source.argument },
    { where: 'the Idempotency-Key header', find: (_context, source) => source.header },
  ];

  it('reads the first source that holds a value, and names them all when none does', () => {
    const read = keyReader(lookups);
    expect(read(context, { argument: 'a-1', header: 'h-1' })).toBe('a-1');
    expect(read(context, { argument: null, header: 'h-1' })).toBe('h-1');
    expect(() => read(context, { argument: '', header: 'h-1' })).toThrow("The idempotency key ('idempotencyKey' in the arguments) is empty.");
    expect(() => read(context, {})).toThrow("The message has no idempotency key: 'idempotencyKey' in the arguments or the Idempotency-Key header is missing.");
  });

  it('tells a delivery without a key from one with a key, valid or not', () => {
    const absent = keyAbsence(lookups);
    expect(absent(context, {})).toBe(true);
    expect(absent(context, { header: '' })).toBe(false);
    expect(absent(context, { argument: 'a-1' })).toBe(false);
    const unreadable = keyAbsence<unknown>([{ where: 'a header sent twice', find: () => { throw new IdempotencyKeyError('twice', 'header'); } }]);
    expect(unreadable(context, {})).toBe(false);
  });

  it('takes a source or a list of them, and refuses anything else, naming the option', () => {
    const byFunction = () => 'k';
    expect(toKeySources('key', { header: 'X-Request-Id' })).toEqual([{ header: 'X-Request-Id' }]);
    expect(toKeySources('key', [{ body: 'id' }, byFunction])).toEqual([{ body: 'id' }, byFunction]);
    for (const bad of [[], 'Idempotency-Key', { header: '' }, { header: 'X', body: 'id' }, { query: 'key' }, null]) {
      expect(() => toKeySources('key of A.b', bad)).toThrow(IdempotencyOptionsError);
    }
    expect(() => toKeySources('key of A.b', { query: 'key' })).toThrow(
      "key of A.b must be { header: 'Name' }, { body: 'path' }, a function of the execution context, or a non-empty list of them; got {\"query\":\"key\"}.",
    );
  });
});
