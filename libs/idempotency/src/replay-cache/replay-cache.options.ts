import { type Duration, MAX_RETENTION_MS, toMilliseconds } from '../duration/duration.js';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { optionValueMessages } from '../options/option-values.messages.js';
import { isPositiveInteger } from '../options/option-values.js';
import { replayCacheMessages } from './replay-cache.messages.js';

/**
 * The bounds of the replay cache: the responses this process committed or read, kept in its
 * memory so that their duplicates are answered without a database round trip. The cache is per
 * process: a record deleted by SQL, or through another instance's `IdempotencyAdmin`, is still
 * replayed here for up to `maxAge` (see `IdempotencyAdmin.evictCached()`).
 */
export interface ReplayCacheOptions {
  /**
   * How many responses are kept at most; past it the least recently replayed goes.
   * @default 10000
   */
  maxEntries?: number;
  /**
   * How many bytes of recorded responses (body, headers as JSON, consumer and key) are kept at
   * most; past it the least recently replayed go. A larger response is never kept.
   * @default 16777216 (16 MiB)
   */
  maxBytes?: number;
  /**
   * How long a response is kept at most, however long its record is retained: the longest a
   * record deleted outside this process (by SQL, by another instance) is still replayed here.
   * @default '1m'
   */
  maxAge?: Duration;
}

/**
 * `replayCache` with its defaults applied.
 * @internal
 */
export interface ResolvedReplayCacheOptions {
  maxEntries: number;
  maxBytes: number;
  maxAgeMs: number;
}

/** The token of the replay cache's slice of the module's options: its bounds, or null when it is off. @internal */
export const REPLAY_CACHE_OPTIONS = Symbol('IDEMPOTENCY:REPLAY_CACHE_OPTIONS');

/**
 * `replayCache` with its defaults applied; null when it is off. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveReplayCache(replayCache: ReplayCacheOptions | false): ResolvedReplayCacheOptions | null {
  if (replayCache === false) {
    return null;
  }
  if (typeof replayCache !== 'object' || replayCache === null || Array.isArray(replayCache)) {
    throw new IdempotencyOptionsError(replayCacheMessages.invalidReplayCache(replayCache));
  }
  const maxEntries = replayCache.maxEntries ?? 10_000;
  const maxBytes = replayCache.maxBytes ?? 16 * 1024 * 1024;
  if (!isPositiveInteger(maxEntries)) {
    throw new IdempotencyOptionsError(optionValueMessages.invalidCount('replayCache.maxEntries', maxEntries));
  }
  if (!isPositiveInteger(maxBytes)) {
    throw new IdempotencyOptionsError(optionValueMessages.invalidCount('replayCache.maxBytes', maxBytes));
  }
  return { maxEntries, maxBytes, maxAgeMs: toMilliseconds('replayCache.maxAge', replayCache.maxAge ?? '1m', MAX_RETENTION_MS) };
}
