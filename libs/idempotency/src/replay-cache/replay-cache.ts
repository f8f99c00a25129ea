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
 * Its clock is `performance.now()`, monotonic: a deadline is a duration from a moment of this
 * process, never compared with another machine's clock.
 * @internal
 */
export class ReplayCache {
  /** By id, the least recently replayed first (a Map keeps insertion order; a replay re-inserts). */
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

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
   * Keeps the committed record of `message` until `expiresAt` (by `now()`, no later than its row's
   * expiry), or `maxAge` from now when that is sooner; evicts the least recently replayed past the bounds.
   */
  fill(message: CachedMessage, record: CachedRecord, expiresAt: number): void {
    const id = idOf(message);
    this.drop(id);
    if (this.bounds === null) {
      return;
    }
    const now = this.now();
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
