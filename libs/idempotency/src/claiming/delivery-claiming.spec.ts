import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { IdempotencyInFlightError, IdempotencyKeyReusedError, IdempotencyUnavailableError } from '../errors/idempotency.errors.js';
import type { ResolvedIdempotencyOptions } from '../idempotency.options.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import { ReplayCache } from '../replay-cache/replay-cache.js';
import type { ClaimOutcome, ClaimRequest, RecordedResponse } from './claim.js';

// The pauses between tries, on the fake clock (jest's fake timers leave node:timers/promises alone).
jest.unstable_mockModule('node:timers/promises', () => ({
  setTimeout: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
}));
const { DeliveryClaiming } = await import('./delivery-claiming.js');

const RESPONSE: RecordedResponse = { status: 201, headers: {}, body: Buffer.from('{}') };

/** What a try finds in the store: the message free (claimed), processed by a twin, or held by one. */
type Found = { kind: 'free' } | { kind: 'processed'; fingerprint: string | null } | { kind: 'held' } | { kind: 'failing'; error: Error };

/** A mode whose store answers each try with the next of `found` (the last one for ever), keeping when it was asked. */
class ScriptedClaiming extends DeliveryClaiming<ClaimRequest> {
  readonly triedAt: number[] = [];

  constructor(
    private readonly found: Found[],
    cache = new ReplayCache(null),
  ) {
    super({ inFlightWaitTimeoutMs: 1_000 } as ResolvedIdempotencyOptions, cache);
  }

  /** How a claim won at `claimedAt` settles, as a mode's open delivery reports it. */
  settle(request: ClaimRequest, claimedAt: number, outcome: DeliveryOutcome, recorded?: RecordedResponse): void {
    this.settled(request, claimedAt)(outcome, recorded);
  }

  protected async tryOnce(request: ClaimRequest): Promise<ClaimOutcome | undefined> {
    this.triedAt.push(performance.now());
    const found = this.found.length > 1 ? (this.found.shift() as Found) : this.found[0];
    switch (found.kind) {
      case 'free':
        return { kind: 'claimed', claim: {} as never };
      case 'processed':
        this.refuseReusedKey(request, found.fingerprint);
        return this.replay(request, RESPONSE);
      case 'held':
        return undefined;
      case 'failing':
        throw found.error;
    }
  }
}

describe('DeliveryClaiming, the twin wait both modes share', () => {
  const request: ClaimRequest = {
    consumer: 'Payments.charge',
    formerConsumer: undefined,
    key: 'order-7',
    sender: 'shop',
    fingerprint: 'f1',
    retentionMs: 60_000,
    waitForTwin: false,
    isolationLevel: undefined,
    savepoint: false,
  };
  let logged: string[];

  beforeEach(() => {
    jest.useFakeTimers();
    logged = [];
    jest.spyOn(Logger.prototype, 'log').mockImplementation((message: unknown) => void logged.push(String(message)));
  });

  afterEach(() => {
    jest.restoreAllMocks();
    jest.useRealTimers();
  });

  /** Claims with `claiming`, letting the fake clock run until the claim ends; how it ended and when each try was made. */
  async function claimed(claiming: ScriptedClaiming, waitForTwin: boolean, of: ClaimRequest = request) {
    const startedAt = performance.now();
    const ending: Promise<{ outcome?: ClaimOutcome; error?: unknown }> = claiming.claim({ ...of, waitForTwin }).then(
      (outcome) => ({ outcome }),
      (error: unknown) => ({ error }),
    );
    await jest.advanceTimersByTimeAsync(5_000);
    return { ...(await ending), tries: claiming.triedAt.map((at) => at - startedAt) };
  }

  it('reject: a twin holding the message is answered as in flight after one try', async () => {
    const { error, tries } = await claimed(new ScriptedClaiming([{ kind: 'held' }, { kind: 'free' }]), false);
    expect(error).toBeInstanceOf(IdempotencyInFlightError);
    expect(tries).toEqual([0]);
  });

  it('wait: tries again after pauses that double, until a try wins the claim', async () => {
    const claiming = new ScriptedClaiming([{ kind: 'held' }, { kind: 'held' }, { kind: 'held' }, { kind: 'free' }]);
    const { outcome, tries } = await claimed(claiming, true);
    expect(outcome?.kind).toBe('claimed');
    expect(tries).toEqual([0, 50, 150, 350]);
  });

  it('wait: gives up at inFlightWaitTimeout, the last pause cut to the time left', async () => {
    const { error, tries } = await claimed(new ScriptedClaiming([{ kind: 'held' }]), true);
    expect(error).toBeInstanceOf(IdempotencyInFlightError);
    expect(tries).toEqual([0, 50, 150, 350, 750, 1_000]);
  });

  it('a twin found processed is replayed and logged as a duplicate once', async () => {
    const { outcome } = await claimed(new ScriptedClaiming([{ kind: 'held' }, { kind: 'processed', fingerprint: 'f1' }]), true);
    expect(outcome).toEqual({ kind: 'duplicate', response: RESPONSE });
    expect(logged).toHaveLength(1);
  });

  it('a twin processed with another fingerprint is a reused key; one with none is not compared', async () => {
    const reused = await claimed(new ScriptedClaiming([{ kind: 'processed', fingerprint: 'f2' }]), false);
    expect(reused.error).toBeInstanceOf(IdempotencyKeyReusedError);
    const unfingerprinted = await claimed(new ScriptedClaiming([{ kind: 'processed', fingerprint: null }]), false);
    expect(unfingerprinted.outcome?.kind).toBe('duplicate');
  });

  it("a try's error ends the claim as it is, with no try after it", async () => {
    const failure = new IdempotencyUnavailableError('no connection', request.consumer, request.key);
    const { error, tries } = await claimed(new ScriptedClaiming([{ kind: 'held' }, { kind: 'failing', error: failure }, { kind: 'free' }]), true);
    expect(error).toBe(failure);
    expect(tries).toEqual([0, 50]);
  });

  describe('with the replay cache', () => {
    let clock: number;
    let cache: ReplayCache;

    beforeEach(() => {
      clock = 0;
      cache = new ReplayCache({ maxEntries: 10, maxBytes: 10_000, maxAgeMs: 3_600_000 }, () => clock);
    });

    it('a claim processed keeps its recorded response until its retention from the claim; the next delivery replays it with no try', async () => {
      const claiming = new ScriptedClaiming([{ kind: 'free' }], cache);
      claiming.settle(request, clock, 'processed', RESPONSE);
      clock = request.retentionMs - 1;
      const { outcome, tries } = await claimed(claiming, false);
      expect(outcome).toEqual({ kind: 'duplicate', response: RESPONSE });
      expect(tries).toEqual([]);
      expect(logged).toEqual([expect.stringContaining('Duplicate of')]);
      clock = request.retentionMs;
      expect((await claimed(claiming, false)).outcome?.kind).toBe('claimed');
    });

    it('a claim that did not process keeps nothing', async () => {
      const claiming = new ScriptedClaiming([{ kind: 'free' }], cache);
      claiming.settle(request, clock, 'failed');
      const { outcome, tries } = await claimed(claiming, false);
      expect(outcome?.kind).toBe('claimed');
      expect(tries).toHaveLength(1);
    });

    it('a delivery that finds the store unavailable, claiming or settling, empties the cache: the store that answers next may have lost those commits', async () => {
      const other = { ...request, key: 'order-8' };
      const lost = new IdempotencyUnavailableError('connection lost', request.consumer, other.key);
      const failing = new ScriptedClaiming([{ kind: 'failing', error: lost }, { kind: 'free' }], cache);
      failing.settle(request, clock, 'processed', RESPONSE);
      expect((await claimed(failing, false, other)).error).toBe(lost);
      // Its second try: the cached record of `request` was dropped.
      expect((await claimed(failing, false)).tries).toHaveLength(2);

      const settling = new ScriptedClaiming([{ kind: 'free' }], cache);
      settling.settle(request, clock, 'processed', RESPONSE);
      clock += 1;
      settling.settle(other, clock, 'unavailable');
      expect((await claimed(settling, false)).tries).toHaveLength(1);
    });

    it('a cached record of another fingerprint is a reused key, with no try', async () => {
      const claiming = new ScriptedClaiming([{ kind: 'free' }], cache);
      claiming.settle({ ...request, fingerprint: 'f2' }, clock, 'processed', RESPONSE);
      const { error, tries } = await claimed(claiming, false);
      expect(error).toBeInstanceOf(IdempotencyKeyReusedError);
      expect(tries).toEqual([]);
    });
  });
});
