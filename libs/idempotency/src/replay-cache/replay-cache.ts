import type { Provider } from '@nestjs/common';
import type { RecordedResponse } from '../claiming/claim.js';
import { REPLAY_CACHE_OPTIONS, type ResolvedReplayCacheOptions } from './replay-cache.options.js';

/** One message of one consumer, as the cache knows it. */
interface CachedMessage {
  readonly consumer: string;
  /** The message id as stored. */
  readonly key: string;
}

/**
 * A completed message's record, as the cache keeps it.
 * @internal
 */
export interface CachedRecord {
  /** The fingerprint the message was processed with; null: not compared. */
  readonly fingerprint: string | null;
  /** The response as the store holds it (sealed when encryption is on), opened on each replay as a stored one is. */
  readonly response: RecordedResponse;
}

interface Entry extends CachedRecord {
  /** By the cache's clock; always before the record's own expiry. */
  readonly expiresAt: number;
  readonly bytes: number;
}

/**
 * The records of completed messages that this process committed or read, in its memory, so that
 * their duplicates are answered without a database round trip while the database could not answer
 * otherwise: it holds only what was committed (never a claim in flight nor a lease), and drops a
 * record before its row expires. Least recently replayed first out, past `maxEntries` or
 * `maxBytes`; none kept longer than `maxAge`. With no bounds (the module's `replayCache: false`),
 * it keeps nothing.
 *
 * A delivery that lost its database connection empties it (`forgetAll()`): the database that
 * answers next may be another one (a replica promoted by a failover) without the last commits it
 * holds, and a duplicate of such a commit must reach the store, to be processed again.
 *
 * Its clock is `performance.now()`, monotonic: a deadline is a duration from a moment of this
 * process, never compared with another machine's clock.
 * @internal
 */
export class ReplayCache {
  /** By id, the least recently replayed first (a Map keeps insertion order; a replay re-inserts). */
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  /** When `forgetAll()` last ran, by `now()`: a record whose claim began before it is not kept. */
  private forgotAllAt = -Infinity;

  constructor(
    private readonly bounds: ResolvedReplayCacheOptions | null,
    /** Milliseconds on a monotonic clock. */
    readonly now: () => number = () => performance.now(),
  ) {}

  /** The record of `message`, unless none is kept or it expired. */
  get(message: CachedMessage): CachedRecord | undefined {
    const id = idOf(message);
    const entry = this.entries.get(id);
    if (entry === undefined) {
      return undefined;
    }
    this.entries.delete(id);
    if (entry.expiresAt <= this.now()) {
      this.bytes -= entry.bytes;
      return undefined;
    }
    this.entries.set(id, entry);
    return entry;
  }

  /**
   * Keeps the committed record of `message`, whose claim began at `claimedAt` (by `now()`), for
   * `keepForMs` from then (no longer than its row is retained), or `maxAge` from now when that is
   * sooner; evicts the least recently replayed past the bounds. A claim that began before the last
   * `forgetAll()` is not kept: its commit may be on the database that was lost.
   */
  fill(message: CachedMessage, record: CachedRecord, claimedAt: number, keepForMs: number): void {
    const id = idOf(message);
    this.drop(id);
    if (this.bounds === null || claimedAt <= this.forgotAllAt) {
      return;
    }
    const now = this.now();
    const expiresAt = claimedAt + keepForMs;
    const bytes = sizeOf(message, record.response);
    if (bytes > this.bounds.maxBytes || expiresAt <= now) {
      return;
    }
    this.entries.set(id, { fingerprint: record.fingerprint, response: record.response, expiresAt: Math.min(expiresAt, now + this.bounds.maxAgeMs), bytes });
    this.bytes += bytes;
    for (const [oldestId, oldest] of this.entries) {
      if (this.entries.size <= this.bounds.maxEntries && this.bytes <= this.bounds.maxBytes) {
        break;
      }
      this.entries.delete(oldestId);
      this.bytes -= oldest.bytes;
    }
  }

  /** Drops the record of `message`. @returns whether one was kept (expired or not). */
  forget(message: CachedMessage): boolean {
    return this.drop(idOf(message));
  }

  /** Drops every record, and refuses those of claims that began before now. */
  forgetAll(): void {
    this.entries.clear();
    this.bytes = 0;
    this.forgotAllAt = this.now();
  }

  private drop(id: string): boolean {
    const entry = this.entries.get(id);
    if (entry === undefined) {
      return false;
    }
    this.entries.delete(id);
    this.bytes -= entry.bytes;
    return true;
  }
}

function idOf({ consumer, key }: CachedMessage): string {
  return `${consumer}\u0000${key}`;
}

/** What a record weighs: its body, its headers' names and values, its consumer and key. */
function sizeOf({ consumer, key }: CachedMessage, { headers, body }: RecordedResponse): number {
  let bytes = (body?.length ?? 0) + Buffer.byteLength(consumer) + Buffer.byteLength(key);
  for (const name in headers) {
    const value = headers[name];
    bytes += Buffer.byteLength(name) + (typeof value === 'string' ? Buffer.byteLength(value) : value.reduce((sum, line) => sum + Buffer.byteLength(line), 0));
  }
  return bytes;
}

/**
 * The module's `ReplayCache`, bounded by its slice of the options.
 * @internal
 */
export const replayCacheProvider: Provider = {
  provide: ReplayCache,
  inject: [REPLAY_CACHE_OPTIONS],
  useFactory: (bounds: ResolvedReplayCacheOptions | null) => new ReplayCache(bounds),
};
