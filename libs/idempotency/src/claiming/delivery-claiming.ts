import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { IdempotencyInFlightError, IdempotencyKeyReusedError, IdempotencyUnavailableError } from '../errors/idempotency.errors.js';
import { TWIN_POLL_FIRST_MS, TWIN_POLL_MAX_MS } from './claim.constants.js';
import { claimMessages } from './claim.messages.js';
import type { ResolvedClaimOptions } from './claim.options.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import type { ReplayCache } from '../replay-cache/replay-cache.js';
import type { ClaimOutcome, ClaimRequest, RecordedResponse } from './claim.js';

/**
 * How a delivery claims its message, in either mode: it tries once (`tryOnce`, the mode's
 * protocol); while a twin of another delivery holds the message, it is answered as in flight
 * (`reject`), or (`wait`) tries again with a growing pause, holding nothing in between, until the
 * module's `inFlightWaitTimeout` has passed. A twin found processed is replayed, unless its key
 * was reused with another payload. How a delivery ended is counted by the delivery's observer,
 * not here.
 *
 * A message whose record this process committed or read is first looked up in the replay cache,
 * before anything of the mode's store is taken, and replayed from there while it is kept (its
 * fingerprint checked as the store's would be); each mode fills the cache only with what its
 * store committed. A delivery that finds the store unavailable, while claiming or settling, empties
 * the cache: the store that answers next may have lost the commits it holds (a failover to an
 * asynchronous replica).
 */
export abstract class DeliveryClaiming<R extends ClaimRequest> {
  private readonly logger = new Logger('Idempotency');

  constructor(
    protected readonly options: ResolvedClaimOptions,
    protected readonly cache: ReplayCache,
  ) {}

  /**
   * Claims `request`'s message for its consumer.
   * @throws IdempotencyKeyReusedError when a twin with another fingerprint was processed.
   * @throws IdempotencyInFlightError when a twin is still in flight past the policy's wait.
   */
  async claim(request: R): Promise<ClaimOutcome> {
    // `wait`: how long this delivery waits for its twins in all; `reject` waits for none that holds the message.
    const deadline = performance.now() + (request.waitForTwin ? this.options.inFlightWaitTimeoutMs : 0);
    let pause = TWIN_POLL_FIRST_MS;
    const cached = this.cache.get(request);
    if (cached) {
      this.refuseReusedKey(request, cached.fingerprint);
      return this.replay(request, cached.response);
    }
    for (;;) {
      const outcome = await this.tryOnce(request, deadline).catch((error: unknown) => {
        if (error instanceof IdempotencyUnavailableError) {
          this.cache.forgetAll();
        }
        throw error;
      });
      if (outcome) {
        return outcome;
      }
      const left = deadline - performance.now();
      if (!request.waitForTwin || left <= 0) {
        throw new IdempotencyInFlightError(request.consumer, request.key);
      }
      await sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, TWIN_POLL_MAX_MS);
    }
  }

  /**
   * One try at the claim, by the mode's protocol: the claim won or a duplicate to replay, or
   * undefined while a twin of another delivery holds the message. `deadline` (by
   * `performance.now()`) is when a `wait` policy stops waiting.
   */
  protected abstract tryOnce(request: R, deadline: number): Promise<ClaimOutcome | undefined>;

  /** A twin processed the message: its recorded `response`, to replay, logged as a duplicate. */
  protected replay(request: R, response: RecordedResponse): ClaimOutcome {
    this.logger.log(claimMessages.duplicate(request.consumer, request.key, request.sender));
    return { kind: 'duplicate', response };
  }

  /**
   * How a delivery that won its claim at `claimedAt` (by the cache's clock, before the claim was
   * sent) settled: once processed, its recorded response is kept in the cache until the claim's
   * retention has passed from `claimedAt`: the store started the record's retention later, by its
   * own clock, so the cache drops it first whatever that clock says. One that found the store
   * unavailable empties the cache.
   */
  protected settled(request: R, claimedAt: number): (outcome: DeliveryOutcome, recorded?: RecordedResponse) => void {
    return (outcome, recorded) => {
      if (outcome === 'processed' && recorded) {
        this.cache.fill(request, { fingerprint: request.fingerprint, response: recorded }, claimedAt, request.retentionMs);
      } else if (outcome === 'unavailable') {
        this.cache.forgetAll();
      }
    };
  }

  /** @throws IdempotencyKeyReusedError when a twin's `fingerprint` is not this request's (either unset: not compared). */
  protected refuseReusedKey(request: R, fingerprint: string | null): void {
    if (request.fingerprint !== null && fingerprint !== null && fingerprint !== request.fingerprint) {
      throw new IdempotencyKeyReusedError(request.consumer, request.key);
    }
  }
}
