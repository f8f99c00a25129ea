import { randomBytes } from 'node:crypto';
import type { ClaimRequest, RecordedResponse } from '../claiming/claim.js';
import { IdempotencyRecordUnreadableError } from '../errors/idempotency.errors.js';
import { type IdempotencyModuleOptions, resolveModuleOptions } from '../idempotency.options.js';
import { ResponseRecording } from './response-recording.js';
import { isSealed } from './response-seal.js';

const request = { consumer: 'POST /webhooks', key: 'evt_1' } as ClaimRequest;
const response: RecordedResponse = { status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"name":"MARKER"}') };
const k1 = randomBytes(32);
const k2 = randomBytes(32);

function recordingWith(options: IdempotencyModuleOptions) {
  return new ResponseRecording(resolveModuleOptions(options));
}

/** What a won claim of a handler with `policy` stores of `response`. */
function committedThrough(recording: ResponseRecording, policy: 'response' | 'status'): RecordedResponse {
  const storing = recording.storing(policy);
  return storing ? storing(request, response) : response;
}

describe('ResponseRecording', () => {
  it('without encryption, commits the response as it is, and replays a plaintext record as it is', () => {
    const recording = recordingWith({});
    expect(committedThrough(recording, 'response')).toBe(response);
    expect(recording.open(request, response)).toBe(response);
  });

  it("with record: 'status', commits the status alone, encrypted or not", () => {
    expect(committedThrough(recordingWith({}), 'status')).toEqual({ status: 200, headers: null, body: null });
    expect(committedThrough(recordingWith({ encryption: { keys: { k1 }, current: 'k1' } }), 'status')).toEqual({ status: 200, headers: null, body: null });
  });

  it('with encryption, commits a sealed record and opens it for a duplicate, also after a rotation', () => {
    const before = recordingWith({ encryption: { keys: { k1 }, current: 'k1' } });
    const sealed = committedThrough(before, 'response');
    expect(isSealed(sealed)).toBe(true);
    expect(sealed.body?.includes('MARKER')).toBe(false);
    const rotated = recordingWith({ encryption: { keys: { k1, k2: k2.toString('base64') }, current: 'k2' } });
    expect(rotated.open(request, sealed)).toEqual(response);
  });

  it('throws IdempotencyRecordUnreadableError naming the key id and the option when the key is gone', () => {
    const sealed = committedThrough(recordingWith({ encryption: { keys: { k1 }, current: 'k1' } }), 'response');
    const withoutK1 = recordingWith({ encryption: { keys: { k2 }, current: 'k2' } });
    const replay = () => withoutK1.open(request, sealed);
    expect(replay).toThrow(IdempotencyRecordUnreadableError);
    expect(replay).toThrow(/sealed with the key 'k1', which is not in encryption\.keys \('k2'\)/);
    expect(() => recordingWith({}).open(request, sealed)).toThrow(
      /sealed with the key 'k1', and the module has no encryption option/,
    );
  });
});
