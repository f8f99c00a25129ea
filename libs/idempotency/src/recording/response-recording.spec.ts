import { randomBytes } from 'node:crypto';
import type { ClaimRequest, OpenDelivery, RecordedResponse } from '../claiming/claim.js';
import { IdempotencyRecordUnreadableError } from '../errors/idempotency-record-unreadable.error.js';
import { type IdempotencyModuleOptions, resolveModuleOptions } from '../idempotency.options.js';
import { ResponseRecording } from './response-recording.js';
import { isSealed } from './response-seal.js';

const request = { consumer: 'POST /webhooks', key: 'evt_1' } as ClaimRequest;
const response: RecordedResponse = { status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"name":"MARKER"}') };
const k1 = randomBytes(32);
const k2 = randomBytes(32);

/** A won claim that keeps what it is asked to commit. */
class KeptDelivery implements OpenDelivery {
  readonly rollbackUndoesWork = true;
  committed: RecordedResponse | undefined;
  rolledBack: string | undefined;
  run<T>(handle: () => Promise<T>): Promise<T> {
    return handle();
  }
  async commit(recorded: RecordedResponse): Promise<void> {
    this.committed = recorded;
  }
  async rollback(outcome: string): Promise<void> {
    this.rolledBack = outcome;
  }
}

function recordingWith(options: IdempotencyModuleOptions) {
  return new ResponseRecording(resolveModuleOptions(options));
}

async function committedThrough(recording: ResponseRecording, policy: 'response' | 'status'): Promise<RecordedResponse> {
  const delivery = new KeptDelivery();
  const outcome = recording.apply({ kind: 'claimed', claim: delivery }, request, policy);
  if (outcome.kind !== 'claimed') {
    throw new Error('expected a claim');
  }
  await outcome.claim.commit(response);
  return delivery.committed as RecordedResponse;
}

describe('ResponseRecording', () => {
  it('without encryption, commits the response as it is, and replays a plaintext record as it is', async () => {
    const recording = recordingWith({});
    expect(await committedThrough(recording, 'response')).toBe(response);
    expect(recording.apply({ kind: 'duplicate', response }, request, 'response')).toEqual({ kind: 'duplicate', response });
  });

  it("with record: 'status', commits the status alone, encrypted or not", async () => {
    expect(await committedThrough(recordingWith({}), 'status')).toEqual({ status: 200, headers: null, body: null });
    expect(await committedThrough(recordingWith({ encryption: { keys: { k1 }, current: 'k1' } }), 'status')).toEqual({ status: 200, headers: null, body: null });
  });

  it('with encryption, commits a sealed record and opens it for a duplicate, also after a rotation', async () => {
    const before = recordingWith({ encryption: { keys: { k1 }, current: 'k1' } });
    const sealed = await committedThrough(before, 'response');
    expect(isSealed(sealed)).toBe(true);
    expect(sealed.body?.includes('MARKER')).toBe(false);
    const rotated = recordingWith({ encryption: { keys: { k1, k2: k2.toString('base64') }, current: 'k2' } });
    expect(rotated.apply({ kind: 'duplicate', response: sealed }, request, 'response')).toEqual({ kind: 'duplicate', response });
  });

  it('throws IdempotencyRecordUnreadableError naming the key id and the option when the key is gone', async () => {
    const sealed = await committedThrough(recordingWith({ encryption: { keys: { k1 }, current: 'k1' } }), 'response');
    const withoutK1 = recordingWith({ encryption: { keys: { k2 }, current: 'k2' } });
    const replay = () => withoutK1.apply({ kind: 'duplicate', response: sealed }, request, 'response');
    expect(replay).toThrow(IdempotencyRecordUnreadableError);
    expect(replay).toThrow(/sealed with the key 'k1', which is not in encryption\.keys \('k2'\)/);
    expect(() => recordingWith({}).apply({ kind: 'duplicate', response: sealed }, request, 'response')).toThrow(
      /sealed with the key 'k1', and the module has no encryption option/,
    );
  });
});
