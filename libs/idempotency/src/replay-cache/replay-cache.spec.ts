import type { RecordedResponse } from '../claiming/claim.js';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { ReplayCache } from './replay-cache.js';
import { resolveReplayCache, type ResolvedReplayCacheOptions } from './replay-cache.options.js';

const HOUR = 3_600_000;

/** A response of `bodyBytes` bytes with no headers, so that an entry weighs the body, 'C' and its key. */
function response(bodyBytes: number): RecordedResponse {
  return { status: 200, headers: null, body: Buffer.alloc(bodyBytes, 'x') };
}

function message(key: string): { consumer: string; key: string } {
  return { consumer: 'C', key };
}

describe('ReplayCache', () => {
  let clock: number;
  const cacheOf = (bounds: Partial<ResolvedReplayCacheOptions> = {}): ReplayCache =>
    new ReplayCache({ maxEntries: 100, maxBytes: 1_000_000, maxAgeMs: HOUR, ...bounds }, () => clock);
  const kept = (cache: ReplayCache, ...keys: string[]): string[] => keys.filter((key) => cache.get(message(key)) !== undefined);

  beforeEach(() => {
    clock = 1_000;
  });

  it('answers the record kept for a message, its fingerprint with it, and nothing for another', () => {
    const cache = cacheOf();
    const record = { fingerprint: 'f1', response: { status: 201, headers: { 'Content-Type': 'application/json' }, body: Buffer.from('{}') } };
    cache.fill(message('k1'), record, clock, HOUR);
    expect(cache.get(message('k1'))).toMatchObject(record);
    expect(cache.get(message('k2'))).toBeUndefined();
    expect(cache.get({ consumer: 'other', key: 'k1' })).toBeUndefined();
  });

  it('evicts the least recently replayed past maxEntries', () => {
    const cache = cacheOf({ maxEntries: 2 });
    cache.fill(message('a'), { fingerprint: null, response: response(1) }, clock, HOUR);
    cache.fill(message('b'), { fingerprint: null, response: response(1) }, clock, HOUR);
    expect(cache.get(message('a'))).toBeDefined(); // a is now the most recently replayed
    cache.fill(message('c'), { fingerprint: null, response: response(1) }, clock, HOUR);
    expect(kept(cache, 'a', 'b', 'c')).toEqual(['a', 'c']);
  });

  it('evicts the least recently replayed past maxBytes, and never keeps a record larger than maxBytes', () => {
    // Each entry weighs its body + 1 byte of consumer + 1 byte of key.
    const cache = cacheOf({ maxBytes: 250 });
    cache.fill(message('a'), { fingerprint: null, response: response(98) }, clock, HOUR);
    cache.fill(message('b'), { fingerprint: null, response: response(98) }, clock, HOUR);
    cache.fill(message('c'), { fingerprint: null, response: response(49) }, clock, HOUR);
    expect(kept(cache, 'a', 'b', 'c')).toEqual(['b', 'c']);
    cache.fill(message('d'), { fingerprint: null, response: response(249) }, clock, HOUR);
    expect(kept(cache, 'b', 'c', 'd')).toEqual(['b', 'c']);
  });

  it("counts the headers' names and values in the bytes, each line of a repeated header", () => {
    const cache = cacheOf({ maxBytes: 30 });
    const headers = { 'x-a': 'y'.repeat(20), 'set-cookie': ['a=1', 'b=2'] }; // 3 + 20 + 10 + 6 bytes
    cache.fill(message('a'), { fingerprint: null, response: { status: 200, headers, body: null } }, clock, HOUR);
    expect(cache.get(message('a'))).toBeUndefined();
    cache.fill(message('b'), { fingerprint: null, response: { status: 200, headers: { 'x-a': 'y'.repeat(20) }, body: null } }, clock, HOUR);
    expect(cache.get(message('b'))).toBeDefined(); // 23 bytes, 25 with consumer and key
  });

  it('goes to the store for a record past its deadline, and past maxAge whatever the deadline', () => {
    const cache = cacheOf({ maxAgeMs: 60_000 });
    cache.fill(message('short'), { fingerprint: null, response: response(1) }, clock, 5_000);
    cache.fill(message('long'), { fingerprint: null, response: response(1) }, clock, HOUR);
    clock += 4_999;
    expect(kept(cache, 'short', 'long')).toEqual(['short', 'long']);
    clock += 1;
    expect(kept(cache, 'short', 'long')).toEqual(['long']);
    clock += 55_000;
    expect(kept(cache, 'long')).toEqual([]);
    cache.fill(message('expired'), { fingerprint: null, response: response(1) }, clock, 0);
    expect(kept(cache, 'expired')).toEqual([]);
  });

  it('forgets a message on demand, saying whether it kept one', () => {
    const cache = cacheOf();
    cache.fill(message('a'), { fingerprint: null, response: response(1) }, clock, HOUR);
    expect(cache.forget(message('a'))).toBe(true);
    expect(cache.forget(message('a'))).toBe(false);
    expect(cache.get(message('a'))).toBeUndefined();
  });

  it('forgets every message at once, and refuses a record whose claim began before that', () => {
    const cache = cacheOf();
    cache.fill(message('a'), { fingerprint: null, response: response(1) }, clock, HOUR);
    const claimedBefore = clock;
    clock += 1;
    cache.forgetAll();
    expect(kept(cache, 'a')).toEqual([]);
    cache.fill(message('b'), { fingerprint: null, response: response(1) }, claimedBefore, HOUR);
    expect(kept(cache, 'b')).toEqual([]);
    clock += 1;
    cache.fill(message('c'), { fingerprint: null, response: response(1) }, clock, HOUR);
    expect(kept(cache, 'c')).toEqual(['c']);
  });

  it('keeps nothing when it is off', () => {
    const cache = new ReplayCache(null, () => clock);
    cache.fill(message('a'), { fingerprint: null, response: response(1) }, clock, HOUR);
    expect(cache.get(message('a'))).toBeUndefined();
  });
});

describe('resolveReplayCache', () => {
  it('applies the defaults, and is off with false', () => {
    expect(resolveReplayCache({})).toEqual({ maxEntries: 10_000, maxBytes: 16 * 1024 * 1024, maxAgeMs: 60_000 });
    expect(resolveReplayCache({ maxEntries: 5, maxBytes: 1024, maxAge: '10s' })).toEqual({ maxEntries: 5, maxBytes: 1024, maxAgeMs: 10_000 });
    expect(resolveReplayCache(false)).toBeNull();
  });

  it('refuses what it cannot use, naming the option', () => {
    expect(() => resolveReplayCache(true as never)).toThrow(IdempotencyOptionsError);
    expect(() => resolveReplayCache(true as never)).toThrow(/^replayCache must be an object .*, or false; got true\.$/);
    expect(() => resolveReplayCache({ maxEntries: 0 })).toThrow('replayCache.maxEntries must be a whole number above 0; got 0.');
    expect(() => resolveReplayCache({ maxBytes: 1.5 })).toThrow('replayCache.maxBytes must be a whole number above 0; got 1.5.');
    expect(() => resolveReplayCache({ maxAge: '0s' })).toThrow(/replayCache\.maxAge/);
  });
});
