import type { ExecutionContext } from '@nestjs/common';
import type { ClaimOutcome, OpenDelivery, RecordedResponse } from '../claiming/claim.js';
import type { ClaimingService } from '../claiming/claiming.service.js';
import type { ResolvedHandler } from './resolved-handler.js';
import { IdempotencyInFlightError, IdempotencyKeyError, IdempotencyUnavailableError } from '../errors/idempotency.errors.js';
import { resolveModuleOptions } from '../idempotency.options.js';
import type { LeaseClaimingService } from '../leasing/lease-claiming.service.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import { ResponseRecording } from '../recording/response-recording.js';
import { IdempotencyTracing } from '../tracing/idempotency-tracing.js';
import { type Delivery, DeliveryCore, type DeliveryEntry } from './delivery-core.js';
import { DeliveryObserver } from './delivery-observer.js';

const RESPONSE: RecordedResponse = { status: 201, headers: {}, body: Buffer.from('{"ok":true}') };
const context = {} as ExecutionContext;

const handler = {
  name: 'Payments.charge',
  consumer: 'POST /payments',
  sender: 'shop',
  key: undefined,
  scope: undefined,
  fingerprint: false,
  retentionMs: 60_000,
  inFlight: undefined,
  isolationLevel: undefined,
  mode: 'transaction',
  leaseMs: 30_000,
  renewLeaseForMs: 0,
  store: 'postgres',
  record: 'response',
  recordErrors: new Set<number>(),
} as unknown as ResolvedHandler;

/** A won claim that settles once, as both modes' do, and writes down how. */
class SettleOnce implements OpenDelivery {
  readonly rollbackUndoesWork = true;
  readonly steps: string[] = [];
  private settled = false;

  constructor(private readonly commitError?: Error) {}

  run<T>(handle: () => Promise<T>): Promise<T> {
    return handle();
  }

  async commit(response: RecordedResponse): Promise<boolean> {
    if (this.settled) {
      return false;
    }
    this.settled = true;
    if (this.commitError) {
      throw this.commitError;
    }
    this.steps.push(`commit ${response.status}`);
    return true;
  }

  async rollback(outcome: DeliveryOutcome): Promise<boolean> {
    if (this.settled) {
      return false;
    }
    this.settled = true;
    this.steps.push(`rollback ${outcome}`);
    return true;
  }
}

/** An entry whose source is the key itself: it commits its handler's result, and answers a failure with it. */
const entry: DeliveryEntry<string> = {
  transport: () => 'test',
  replay: (_delivery, _key, recorded) => ({ replayed: recorded.status }),
  async process(delivery: Delivery<string>) {
    await delivery.run(async () => 'done');
    await delivery.commit(RESPONSE);
    // Settled already: neither is counted again.
    await delivery.commit(RESPONSE);
    await delivery.rollback('failed');
    return 'done';
  },
  fail: (error) => ({ failed: error }),
};

describe('DeliveryCore, the claim core of every entry, and its observer', () => {
  let metrics: IdempotencyMetricsService;

  /** A core whose transactional mode claims as `claim` does. */
  function coreClaiming(claim: () => Promise<ClaimOutcome>): DeliveryCore {
    const options = resolveModuleOptions({});
    metrics = new IdempotencyMetricsService(options);
    const observer = new DeliveryObserver(metrics, new IdempotencyTracing(options.tracing));
    return new DeliveryCore({ claim } as unknown as ClaimingService, {} as LeaseClaimingService, new ResponseRecording(options), observer);
  }

  /** The deliveries counted for the handler's consumer, by outcome; and how many are still in flight. */
  function counted() {
    const [counts] = metrics.deliveries();
    const { processed, duplicate, rejected, unavailable, failed } = counts;
    return { sender: counts.sender, outcomes: { processed, duplicate, rejected, unavailable, failed }, inFlight: metrics.inFlight()[0]?.deliveries };
  }

  function deliver(core: DeliveryCore, key: (source: string) => string = (source) => source): Promise<unknown> {
    const plan = core.plan<string>(handler, { key: (_context, source) => key(source), defaultInFlight: 'reject' });
    return core.deliver(plan, context, 'order-7', entry);
  }

  it('a won claim runs, commits once, and is counted processed once', async () => {
    const claim = new SettleOnce();
    await expect(deliver(coreClaiming(async () => ({ kind: 'claimed', claim })))).resolves.toBe('done');
    expect(claim.steps).toEqual(['commit 201']);
    expect(counted()).toEqual({ sender: 'shop', outcomes: { processed: 1, duplicate: 0, rejected: 0, unavailable: 0, failed: 0 }, inFlight: 0 });
  });

  it('a duplicate is counted as such and answered by the entry with its record', async () => {
    await expect(deliver(coreClaiming(async () => ({ kind: 'duplicate', response: RESPONSE })))).resolves.toEqual({ replayed: 201 });
    expect(counted().outcomes).toMatchObject({ duplicate: 1, processed: 0 });
    expect(counted().inFlight).toBe(0);
  });

  it('a delivery without a usable key is counted rejected under its sender, and never claimed', async () => {
    let claims = 0;
    const refusal = new IdempotencyKeyError('no key', 'the Idempotency-Key header');
    const answer = await deliver(
      coreClaiming(async () => {
        claims++;
        return { kind: 'duplicate', response: RESPONSE };
      }),
      () => {
        throw refusal;
      },
    );
    expect(answer).toEqual({ failed: refusal });
    expect(claims).toBe(0);
    expect(counted()).toMatchObject({ sender: 'shop', outcomes: { rejected: 1 }, inFlight: 0 });
  });

  it('a claim refused in flight is counted rejected and as a 409 refusal; one unavailable as unavailable and a 503', async () => {
    const inFlight = new IdempotencyInFlightError(handler.consumer, 'order-7');
    await expect(deliver(coreClaiming(() => Promise.reject(inFlight)))).resolves.toEqual({ failed: inFlight });
    expect(counted().outcomes).toMatchObject({ rejected: 1 });
    const unavailable = new IdempotencyUnavailableError('no connection', handler.consumer, 'order-7');
    await deliver(coreClaiming(() => Promise.reject(unavailable)));
    expect(counted().outcomes).toMatchObject({ unavailable: 1 });
    expect(metrics.refusals()).toEqual([{ consumer: handler.consumer, status: 503, count: 1 }]);
  });

  it('a commit that fails is counted by its outcome, once', async () => {
    const failure = new IdempotencyUnavailableError('connection lost', handler.consumer, 'order-7');
    const claim = new SettleOnce(failure);
    await expect(deliver(coreClaiming(async () => ({ kind: 'claimed', claim })))).resolves.toEqual({ failed: failure });
    expect(counted()).toMatchObject({ outcomes: { unavailable: 1, processed: 0, failed: 0 }, inFlight: 0 });
  });
});
