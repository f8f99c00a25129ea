import { createHash } from 'node:crypto';
import type { RecordedResponse } from '../claiming/claim.js';
import type { LeaseAttempt, LeaseKey, LeaseRequest, LeaseStore, RemovableEntry, StoredLeaseEntry } from './lease-store.js';

/**
 * The part of a `redis` (node-redis 5 or 6) client the store uses: `EVALSHA`, and `EVAL` the first
 * time a server runs a script. Pass the client the application already has, connected; the store
 * never connects or closes it.
 */
export interface RedisEvalClient {
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /**
   * Runs the script the server cached under `sha1`. Optional: a client without it sends every
   * script whole with `eval`.
   */
  evalSha?(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** A Lua script, and the digest Redis caches it under. */
interface LuaScript {
  readonly text: string;
  readonly sha1: string;
}

function luaScript(text: string): LuaScript {
  return { text, sha1: createHash('sha1').update(text).digest('hex') };
}

/** Redis's answer to `EVALSHA` of a script it has not cached (a new server, a `SCRIPT FLUSH`). */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * A message's value in Redis: leased (`t`, the token, until `e`) or completed (`r`, the response).
 * Values written before 0.4.0 have no `e`: their lease ends with the key.
 */
interface StoredLease {
  /** The holder's token; absent once completed. */
  t?: string;
  /** When the lease expires, in milliseconds since the epoch by Redis's clock. */
  e?: number;
  /** The fingerprint, or null. */
  f: string | null;
  /** The recorded response, its body in base64. */
  r?: { s: number | null; h: Record<string, string | string[]> | null; b: string | null };
}

/** Redis's clock, in milliseconds since the epoch: scripts replicate their effects, so reading it before writing is safe. */
const NOW = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)`;

/**
 * A new message, or a lease that expired (its token still on it: nobody took it over) with the
 * same fingerprint: the lease is ours (0: new, 1: taken over). Else the value, for the caller to
 * read what holds it. The key lives for the retention (or the lease, if longer), as the
 * PostgreSQL row of a lease does, so that a holder that outlives its lease can still complete.
 * ARGV: token, fingerprint ('' for none), lease, key's time to live.
 */
const CLAIM = luaScript(`${NOW}
local value = redis.call('GET', KEYS[1])
local tookOver = 0
if value then
  local stored = cjson.decode(value)
  local fingerprint = stored.f
  if fingerprint == cjson.null then fingerprint = '' end
  if not stored.t or not stored.e or stored.e >= now or fingerprint ~= ARGV[2] then return value end
  tookOver = 1
end
local fingerprint = cjson.null
if ARGV[2] ~= '' then fingerprint = ARGV[2] end
redis.call('SET', KEYS[1], cjson.encode({ t = ARGV[1], e = now + tonumber(ARGV[3]), f = fingerprint }), 'PX', ARGV[4])
return tookOver`);

/** Replaces the value (with a new expiry) only while the token holds the lease, expired or not. */
const COMPLETE = luaScript(`
local value = redis.call('GET', KEYS[1])
if not value or cjson.decode(value).t ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`);

const RELEASE = luaScript(`
local value = redis.call('GET', KEYS[1])
if not value or cjson.decode(value).t ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`);

/** Moves the lease's expiry, and the key's if it would go first, only while the token holds the lease. */
const EXTEND = luaScript(`${NOW}
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local stored = cjson.decode(value)
if stored.t ~= ARGV[1] then return 0 end
local lease = tonumber(ARGV[2])
local ttl = math.max(redis.call('PTTL', KEYS[1]), lease)
if stored.e then
  stored.e = now + lease
  redis.call('SET', KEYS[1], cjson.encode(stored), 'PX', ttl)
else
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1`);

/** The value and its time to live in milliseconds. */
const INSPECT = luaScript(`
local value = redis.call('GET', KEYS[1])
if not value then return false end
return { value, redis.call('PTTL', KEYS[1]) }`);

/** Deletes the value when it is what ARGV[1] names: 'completed', 'leased' or 'any'. */
const REMOVE = luaScript(`
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local leased = cjson.decode(value).t ~= nil
if ARGV[1] == 'any' or (ARGV[1] == 'leased' and leased) or (ARGV[1] == 'completed' and not leased) then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`);

/**
 * Leases in Redis, for high volume where a duplicate after the key expired is harmless, and where
 * the handler tolerates a second run (Redis forgets what it did not persist: see the guide's page
 * docs/lease-mode.md, "Choosing a store"). A message is a key holding its lease (token and expiry) or its response,
 * kept by TTL for the handler's retention; the claim, and its holder's token-checked complete,
 * release and extend, are Lua scripts, atomic in Redis. A lease expires by Redis's clock; once it
 * did, the next delivery takes it over with a new token, and until one does, its holder may still
 * complete it (as with the PostgreSQL store).
 *
 * @example
 * ```ts
 * const redis = await createClient({ url: process.env.REDIS_URL }).connect();
 * IdempotencyModule.forRoot({ stores: { redis: new RedisLeaseStore(redis) } });
 * // @IdempotentHandler({ mode: 'lease', store: 'redis' })
 * ```
 */
export class RedisLeaseStore implements LeaseStore {
  /** @param prefix Put before every key the store writes. */
  constructor(
    private readonly client: RedisEvalClient,
    private readonly prefix = 'idempotency:',
  ) {}

  async claim(request: LeaseRequest, token: string): Promise<LeaseAttempt> {
    const ttl = Math.max(request.retentionMs, request.leaseMs);
    const found = (await this.run(CLAIM, request, [token, request.fingerprint ?? '', String(request.leaseMs), String(ttl)])) as number | string;
    if (typeof found === 'number') {
      return { kind: 'claimed', tookOver: found === 1 };
    }
    const stored = JSON.parse(found) as StoredLease;
    if (stored.t !== undefined || !stored.r) {
      return { kind: 'leased', fingerprint: stored.f };
    }
    const { s, h, b } = stored.r;
    return { kind: 'completed', fingerprint: stored.f, response: { status: s, headers: h, body: b === null ? null : Buffer.from(b, 'base64') } };
  }

  async complete(request: LeaseRequest, token: string, response: RecordedResponse): Promise<boolean> {
    const completed: StoredLease = {
      f: request.fingerprint,
      r: { s: response.status, h: response.headers, b: response.body === null ? null : response.body.toString('base64') },
    };
    return (await this.run(COMPLETE, request, [token, JSON.stringify(completed), String(request.retentionMs)])) === 1;
  }

  async release(key: LeaseKey, token: string): Promise<boolean> {
    return (await this.run(RELEASE, key, [token])) === 1;
  }

  async extend(key: LeaseKey, token: string, leaseMs: number): Promise<boolean> {
    return (await this.run(EXTEND, key, [token, String(leaseMs)])) === 1;
  }

  async inspect(key: LeaseKey): Promise<StoredLeaseEntry | undefined> {
    const found = (await this.run(INSPECT, key, [])) as [string, number] | null;
    if (found === null) {
      return undefined;
    }
    const [value, ttl] = found;
    const stored = JSON.parse(value) as StoredLease;
    const r = stored.t === undefined ? stored.r : undefined;
    return {
      leaseToken: stored.t ?? null,
      expiresAt: ttl >= 0 ? new Date(Date.now() + Number(ttl)) : null,
      fingerprint: stored.f,
      response: r ? { status: r.s, headers: r.h, body: r.b === null ? null : Buffer.from(r.b, 'base64') } : null,
    };
  }

  async remove(key: LeaseKey, which: RemovableEntry): Promise<boolean> {
    return (await this.run(REMOVE, key, [which])) === 1;
  }

  /** Runs `script` by its digest, and whole only where the server has not cached it yet. */
  private async run(script: LuaScript, { consumer, key }: LeaseKey, args: string[]): Promise<unknown> {
    // The consumer's length keeps `a:b` + `c` apart from `a` + `b:c`.
    const options = { keys: [`${this.prefix}${consumer.length}:${consumer}:${key}`], arguments: args };
    if (this.client.evalSha) {
      try {
        return await this.client.evalSha(script.sha1, options);
      } catch (error) {
        if (!isNoScript(error)) {
          throw error;
        }
      }
    }
    return this.client.eval(script.text, options);
  }
}
