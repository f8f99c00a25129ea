import { deepStrictEqual, ok, strictEqual } from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RecordedResponse } from '../claiming/claim.js';
import type { LeaseRequest, LeaseStore } from '../leasing/lease-store.js';

/** One check of the contract: a name for the test runner, and the check, which throws when the store breaks it. */
export interface ContractCheck {
  readonly name: string;
  readonly run: () => Promise<void>;
}

const RESPONSE: RecordedResponse = {
  status: 201,
  headers: { 'content-type': 'application/json; charset=utf-8', location: '/orders/7' },
  body: Buffer.from([0x7b, 0x7d, 0x00, 0xff]),
};

/**
 * What every lease store must do, as checks a test runner can run against a real store:
 *
 * ```ts
 * import { leaseStoreContract } from 'nestjs-idempotent-consumer/testing';
 *
 * describe('my lease store', () => {
 *   for (const check of leaseStoreContract(() => myStore)) {
 *     it(check.name, check.run);
 *   }
 * });
 * ```
 *
 * Each check uses messages of its own (a random key), so one store can serve them all; leases of
 * a few hundred milliseconds let the checks see them expire, by the store's clock.
 */
export function leaseStoreContract(store: () => LeaseStore): ContractCheck[] {
  const request = (overrides: Partial<LeaseRequest> = {}): LeaseRequest => ({
    consumer: 'Contract.check',
    key: `contract-${randomUUID()}`,
    sender: 'contract',
    fingerprint: 'f'.repeat(64),
    leaseMs: 30_000,
    retentionMs: 60_000,
    ...overrides,
  });
  /** Claims `message` again and again until `until` says what came is what was waited for. */
  const claimUntil = async (message: LeaseRequest, token: string, until: (kind: string) => boolean, withinMs = 10_000) => {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const attempt = await store().claim(message, token);
      if (until(attempt.kind)) {
        return attempt;
      }
      ok(Date.now() < deadline, `still '${attempt.kind}' after ${withinMs} ms`);
      await sleep(25);
    }
  };

  return [
    {
      name: 'a new message is claimed, and a twin finds it leased, with its fingerprint',
      run: async () => {
        const message = request();
        deepStrictEqual(await store().claim(message, randomUUID()), { kind: 'claimed', tookOver: false });
        deepStrictEqual(await store().claim(message, randomUUID()), { kind: 'leased', fingerprint: message.fingerprint });
      },
    },
    {
      name: 'of many concurrent claims of one message, exactly one wins',
      run: async () => {
        const message = request();
        const attempts = await Promise.all(Array.from({ length: 20 }, () => store().claim(message, randomUUID())));
        strictEqual(attempts.filter((attempt) => attempt.kind === 'claimed').length, 1);
        strictEqual(attempts.filter((attempt) => attempt.kind === 'leased').length, 19);
      },
    },
    {
      name: 'the holder completes it, and every later claim finds it completed with the response, byte for byte',
      run: async () => {
        const message = request();
        const token = randomUUID();
        await store().claim(message, token);
        strictEqual(await store().complete(message, token, RESPONSE), true);
        const found = await store().claim(message, randomUUID());
        strictEqual(found.kind, 'completed');
        if (found.kind === 'completed') {
          strictEqual(found.fingerprint, message.fingerprint);
          deepStrictEqual({ ...found.response, body: found.response.body && Buffer.from(found.response.body) }, RESPONSE);
        }
        strictEqual(await store().complete(message, token, RESPONSE), false, 'a completed message cannot be completed again');
      },
    },
    {
      name: 'an empty response, and a message without fingerprint, are kept as such',
      run: async () => {
        const message = request({ fingerprint: null });
        const token = randomUUID();
        await store().claim(message, token);
        strictEqual(await store().complete(message, token, { status: null, headers: null, body: null }), true);
        deepStrictEqual(await store().claim(message, randomUUID()), {
          kind: 'completed',
          fingerprint: null,
          response: { status: null, headers: null, body: null },
        });
      },
    },
    {
      name: 'a token that does not hold the lease cannot complete, release or extend it',
      run: async () => {
        const message = request();
        const token = randomUUID();
        await store().claim(message, token);
        const stranger = randomUUID();
        strictEqual(await store().complete(message, stranger, RESPONSE), false);
        strictEqual(await store().release(message, stranger), false);
        strictEqual(await store().extend(message, stranger, 30_000), false);
        strictEqual((await store().claim(message, randomUUID())).kind, 'leased', 'the holder still holds it');
        strictEqual(await store().complete(message, token, RESPONSE), true);
      },
    },
    {
      name: 'a released message is claimed at once by its next delivery',
      run: async () => {
        const message = request();
        const token = randomUUID();
        await store().claim(message, token);
        strictEqual(await store().release(message, token), true);
        strictEqual((await store().claim(message, randomUUID())).kind, 'claimed');
        strictEqual(await store().release(message, token), false, 'released once only');
      },
    },
    {
      name: 'an expired lease is taken over, and its old holder is fenced: it can no longer complete, extend or release',
      run: async () => {
        const message = request({ leaseMs: 200 });
        const old = randomUUID();
        await store().claim(message, old);
        const fresh = randomUUID();
        deepStrictEqual(await claimUntil(message, fresh, (kind) => kind === 'claimed'), { kind: 'claimed', tookOver: true });
        strictEqual(await store().complete(message, old, RESPONSE), false);
        strictEqual(await store().extend(message, old, 30_000), false);
        strictEqual(await store().release(message, old), false);
        strictEqual(await store().complete(message, fresh, RESPONSE), true);
      },
    },
    {
      name: 'a holder whose lease expired with nobody taking it over still completes it (or extends it): expired is not lost',
      run: async () => {
        const message = request({ leaseMs: 200 });
        const token = randomUUID();
        await store().claim(message, token);
        // Nothing to poll without taking it over: wait well past the lease, by the store's clock too.
        await sleep(600);
        strictEqual(await store().extend(message, token, 200), true, 'an expired lease still held by its token is extended');
        await sleep(600);
        strictEqual(await store().complete(message, token, RESPONSE), true);
        strictEqual((await store().claim(message, randomUUID())).kind, 'completed');
      },
    },
    {
      name: 'an expired lease is not taken over by a delivery with another fingerprint: it finds the lease, with its fingerprint',
      run: async () => {
        const message = request({ leaseMs: 200 });
        const token = randomUUID();
        await store().claim(message, token);
        await sleep(600);
        deepStrictEqual(await store().claim({ ...message, fingerprint: 'e'.repeat(64) }, randomUUID()), { kind: 'leased', fingerprint: message.fingerprint });
        strictEqual(await store().complete(message, token, RESPONSE), true, 'its holder still completes it');
      },
    },
    {
      name: 'an extended lease holds past its first expiry',
      run: async () => {
        const message = request({ leaseMs: 300 });
        const token = randomUUID();
        await store().claim(message, token);
        strictEqual(await store().extend(message, token, 30_000), true);
        await sleep(600);
        strictEqual((await store().claim(message, randomUUID())).kind, 'leased');
        strictEqual(await store().complete(message, token, RESPONSE), true);
      },
    },
    {
      name: 'a completed message is remembered after its lease would have expired',
      run: async () => {
        const message = request({ leaseMs: 200, retentionMs: 60_000 });
        const token = randomUUID();
        await store().claim(message, token);
        strictEqual(await store().complete(message, token, RESPONSE), true);
        await sleep(400);
        strictEqual((await store().claim(message, randomUUID())).kind, 'completed');
      },
    },
    {
      name: 'a key is scoped to its consumer: another consumer claims it for itself',
      run: async () => {
        const message = request({ key: `${randomUUID()}:tail` });
        await store().claim(message, randomUUID());
        strictEqual((await store().claim({ ...message, consumer: 'Contract.other' }, randomUUID())).kind, 'claimed');
        // Joined naively with ':', these two would name the same message.
        const [head] = message.key.split(':');
        strictEqual((await store().claim({ ...message, consumer: `${message.consumer}:${head}`, key: 'tail' }, randomUUID())).kind, 'claimed');
      },
    },
  ];
}
