import { type RedisEvalClient, RedisLeaseStore } from 'nestjs-idempotent-consumer';
import { leaseStoreContract } from 'nestjs-idempotent-consumer/testing';
import { createClient } from 'redis';
import { REDIS_URL, redisAvailable } from './support/brokers.js';

const describeWithRedis = (await redisAvailable()) ? describe : describe.skip;

/** The contract of `nestjs-idempotent-consumer/testing`, run against the Redis store the module ships (the PostgreSQL one's run sits beside its source). */
describeWithRedis('the lease store contract, on Redis', () => {
  const client = createClient({ url: REDIS_URL });

  beforeAll(async () => {
    await client.connect();
  });

  afterAll(async () => {
    await client.close();
  });

  for (const check of leaseStoreContract(() => new RedisLeaseStore(client, `idempotency-contract-${process.pid}:`))) {
    it(check.name, check.run);
  }

  /** The client, with the names of the commands the store sent through it. */
  function recordingClient(withEvalSha: boolean) {
    const sent: string[] = [];
    const recording: RedisEvalClient = {
      eval: (script, options) => (sent.push('EVAL'), client.eval(script, options)),
      ...(withEvalSha ? { evalSha: (sha1: string, options: { keys: string[]; arguments: string[] }) => (sent.push('EVALSHA'), client.evalSha(sha1, options)) } : {}),
    };
    return { recording, sent };
  }

  const request = (key: string) => ({ consumer: 'scripts', key, sender: 'test', fingerprint: null, leaseMs: 10_000, retentionMs: 60_000 });

  it('sends each script by its digest, and whole only to a server that has not cached it', async () => {
    const { recording, sent } = recordingClient(true);
    const store = new RedisLeaseStore(recording, `idempotency-scripts-${process.pid}:`);
    await client.scriptFlush();
    expect(await store.claim(request('first'), 'token-1')).toEqual({ kind: 'claimed', tookOver: false });
    expect(sent).toEqual(['EVALSHA', 'EVAL']);
    expect(await store.claim(request('second'), 'token-2')).toEqual({ kind: 'claimed', tookOver: false });
    expect(await store.claim(request('second'), 'token-3')).toEqual({ kind: 'leased', fingerprint: null });
    expect(sent).toEqual(['EVALSHA', 'EVAL', 'EVALSHA', 'EVALSHA']);
  });

  it('sends every script whole through a client without evalSha', async () => {
    const { recording, sent } = recordingClient(false);
    const store = new RedisLeaseStore(recording, `idempotency-scripts-eval-${process.pid}:`);
    expect(await store.claim(request('only'), 'token-1')).toEqual({ kind: 'claimed', tookOver: false });
    expect(await store.release(request('only'), 'token-1')).toBe(true);
    expect(sent).toEqual(['EVAL', 'EVAL']);
  });
});
