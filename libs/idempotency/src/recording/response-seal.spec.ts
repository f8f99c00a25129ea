import { createSecretKey, randomBytes } from 'node:crypto';
import type { RecordedResponse } from '../claiming/claim.js';
import { isSealed, type Keyring, openResponse, sealingKeyId, sealResponse, UnreadableRecord } from './response-seal.js';

const owner = { consumer: 'POST /payments', key: 'key-1' };
const keyA = createSecretKey(randomBytes(32));
const keyB = createSecretKey(randomBytes(32));
const ringA: Keyring = { current: 'a', keys: new Map([['a', keyA]]) };
/** After a rotation: `b` seals, `a` still opens. */
const ringAB: Keyring = { current: 'b', keys: new Map([['a', keyA], ['b', keyB]]) };
const ringB: Keyring = { current: 'b', keys: new Map([['b', keyB]]) };

const httpResponse: RecordedResponse = {
  status: 201,
  headers: { 'content-type': 'application/json; charset=utf-8', 'x-trace': ['one', 'two'], location: '/payments/7' },
  body: Buffer.from(JSON.stringify({ id: 7, cardHolder: 'MARKER-Jane Doe' })),
};

function unreadable(result: RecordedResponse | UnreadableRecord): UnreadableRecord {
  expect(result).toBeInstanceOf(UnreadableRecord);
  return result as UnreadableRecord;
}

describe('sealResponse / openResponse', () => {
  it('seals headers and body into the body, keeps the status, and opens to the same response', () => {
    const sealed = sealResponse(ringA, owner, httpResponse);
    expect(sealed.status).toBe(201);
    expect(sealed.headers).toBeNull();
    expect(isSealed(sealed)).toBe(true);
    expect(sealed.body?.includes('MARKER')).toBe(false);
    expect(sealed.body?.includes('content-type')).toBe(false);
    // Marker 0, format 1, the key id's length and the key id, in the clear.
    expect([...(sealed.body as Buffer).subarray(0, 4)]).toEqual([0, 1, 1, 'a'.charCodeAt(0)]);
    expect(openResponse(ringA, owner, sealed)).toEqual(httpResponse);
  });

  it('names the key that sealed a record, and none for a plaintext record or an unknown format', () => {
    expect(sealingKeyId(sealResponse(ringA, owner, httpResponse))).toBe('a');
    expect(sealingKeyId(sealResponse(ringAB, owner, httpResponse))).toBe('b');
    expect(sealingKeyId(httpResponse)).toBeNull();
    const future = Buffer.from(sealResponse(ringA, owner, httpResponse).body as Buffer);
    future[1] = 2;
    expect(sealingKeyId({ status: 201, headers: null, body: future })).toBeNull();
  });

  it('tells an empty body from none, and empty headers from none, after the round trip', () => {
    const responses: RecordedResponse[] = [
      { status: 204, headers: {}, body: Buffer.alloc(0) },
      { status: 200, headers: {}, body: null },
      { status: null, headers: null, body: Buffer.from('{"reply":true}') },
      { status: 200, headers: { a: 'b' }, body: randomBytes(70_000) },
    ];
    for (const response of responses) {
      expect(openResponse(ringA, owner, sealResponse(ringA, owner, response))).toEqual(response);
    }
  });

  it('uses a new IV for every record: the same response seals to different bytes', () => {
    const first = sealResponse(ringA, owner, httpResponse).body as Buffer;
    const second = sealResponse(ringA, owner, httpResponse).body as Buffer;
    expect(first.equals(second)).toBe(false);
    expect(first.subarray(4, 16).equals(second.subarray(4, 16))).toBe(false);
  });

  it('leaves a response with neither headers nor body (an event, a status-only record) as it is', () => {
    const statusOnly = { status: 202, headers: null, body: null };
    expect(sealResponse(ringA, owner, statusOnly)).toBe(statusOnly);
    expect(openResponse(ringA, owner, statusOnly)).toBe(statusOnly);
  });

  it('after a rotation, opens records of the old key and seals new ones with the current key', () => {
    const old = sealResponse(ringA, owner, httpResponse);
    expect(openResponse(ringAB, owner, old)).toEqual(httpResponse);
    const fresh = sealResponse(ringAB, owner, httpResponse);
    expect((fresh.body as Buffer).subarray(3, 4).toString()).toBe('b');
    expect(openResponse(ringB, owner, fresh)).toEqual(httpResponse);
  });

  it('names the key id when the key is no longer configured, or encryption is off', () => {
    const old = sealResponse(ringA, owner, httpResponse);
    expect(unreadable(openResponse(ringB, owner, old))).toMatchObject({ reason: 'unknown-key', keyId: 'a', formatVersion: 1 });
    expect(unreadable(openResponse(null, owner, old))).toMatchObject({ reason: 'no-encryption', keyId: 'a' });
  });

  it('refuses a record whose ciphertext, tag, IV or status was altered', () => {
    const sealed = sealResponse(ringA, owner, httpResponse);
    const body = sealed.body as Buffer;
    for (const offset of [4, 4 + 12, body.length - 1]) {
      const altered = Buffer.from(body);
      altered[offset] ^= 0x01;
      expect(unreadable(openResponse(ringA, owner, { ...sealed, body: altered })).reason).toBe('not-authentic');
    }
    expect(unreadable(openResponse(ringA, owner, { ...sealed, status: 200 })).reason).toBe('not-authentic');
  });

  it('refuses a record moved to another consumer or another key (both are authenticated)', () => {
    const sealed = sealResponse(ringA, owner, httpResponse);
    expect(unreadable(openResponse(ringA, { ...owner, consumer: 'POST /refunds' }, sealed)).reason).toBe('not-authentic');
    expect(unreadable(openResponse(ringA, { ...owner, key: 'key-2' }, sealed)).reason).toBe('not-authentic');
    // `a:b` + `c` is not `a` + `b:c`.
    const joined = sealResponse(ringA, { consumer: 'a:b', key: 'c' }, httpResponse);
    expect(unreadable(openResponse(ringA, { consumer: 'a', key: 'b:c' }, joined)).reason).toBe('not-authentic');
  });

  it('refuses a record relabelled with another configured key id, and a key id configured with other bytes', () => {
    const sealed = sealResponse(ringA, owner, httpResponse);
    const relabelled = Buffer.from(sealed.body as Buffer);
    relabelled[3] = 'b'.charCodeAt(0);
    expect(unreadable(openResponse(ringAB, owner, { ...sealed, body: relabelled }))).toMatchObject({ reason: 'not-authentic', keyId: 'b' });
    const impostor: Keyring = { current: 'a', keys: new Map([['a', keyB]]) };
    expect(unreadable(openResponse(impostor, owner, sealed))).toMatchObject({ reason: 'not-authentic', keyId: 'a' });
  });

  it('passes plaintext records through: HTTP ones (headers set) and message replies (JSON), with or without a keyring', () => {
    const reply = { status: null, headers: null, body: Buffer.from('{"ok":true}') };
    for (const plaintext of [httpResponse, reply, { status: 200, headers: {}, body: Buffer.from([0, 1, 2]) }]) {
      expect(isSealed(plaintext)).toBe(false);
      expect(openResponse(ringA, owner, plaintext)).toBe(plaintext);
      expect(openResponse(null, owner, plaintext)).toBe(plaintext);
    }
  });

  it('refuses a sealed record of an unknown format version or cut short, instead of replaying it', () => {
    const sealed = sealResponse(ringA, owner, httpResponse);
    const future = Buffer.from(sealed.body as Buffer);
    future[1] = 2;
    expect(unreadable(openResponse(ringA, owner, { ...sealed, body: future }))).toMatchObject({ reason: 'unknown-format', formatVersion: 2, keyId: null });
    const cut = (sealed.body as Buffer).subarray(0, 20);
    expect(unreadable(openResponse(ringA, owner, { ...sealed, body: cut })).reason).toBe('unknown-format');
  });
});
