import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClaimRequest } from '../claiming/claim.js';
import type { ClaimOutcome } from '../claiming/claiming.service.js';
import type { ActiveClaim } from '../context/idempotency.context.js';
import { IdempotencyInFlightError } from '../errors/idempotency-in-flight.error.js';
import { IdempotencyKeyReusedError } from '../errors/idempotency-key-reused.error.js';
import { IdempotencyUnavailableError } from '../errors/idempotency-unavailable.error.js';
import { CLAIM_STORAGE, RESOLVED_OPTIONS, TWIN_POLL_FIRST_MS, TWIN_POLL_MAX_MS } from '../idempotency.internal-constants.js';
import { messages } from '../idempotency.messages.js';
import type { ResolvedIdempotencyOptions } from '../idempotency.options.js';
import { failureOutcome } from '../errors/delivery-error-classes.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import type { LeaseAttempt, LeaseRequest } from './lease-store.js';
import { LeaseStores } from './lease-stores.js';
import { OpenLease } from './open-lease.js';

/** A claim in lease mode: the request, its lease and the store that keeps it. */
export interface LeaseClaimRequest extends ClaimRequest, LeaseRequest {
  readonly store: string;
  /** How long after the claim the lease is renewed while the handler runs; 0: never. */
  readonly renewLeaseForMs: number;
}

/**
 * The lease mode's protocol, for handlers with external effects: the claim commits at once in
 * the store, as a lease under a fencing token, and the handler runs with no transaction or
 * connection held. Its success completes the message while the token holds; its failure releases
 * it; a crash leaves the lease to expire, and the next delivery then takes it over with a new
 * token. While the handler runs, its lease is renewed every third of the lease, up to the
 * handler's `renewLeaseFor` after the claim. A twin whose lease is live is answered as in flight (`reject`) or waited for (`wait`,
 * polling the store without holding anything). The store alone decides: a twin in this process
 * is no exception, as a holder that hangs must not keep its message from the others once its
 * lease runs out. The model of this protocol, checked with spin, is
 * `lease-protocol.pml` beside this file.
 */
@Injectable()
export class LeaseClaimingService {
  private readonly logger = new Logger('Idempotency');

  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    @Inject(CLAIM_STORAGE) private readonly storage: AsyncLocalStorage<ActiveClaim>,
    private readonly stores: LeaseStores,
    private readonly metrics: IdempotencyMetricsService,
  ) {}

  /**
   * Takes the lease of `request`'s message, or finds it completed.
   * @throws IdempotencyKeyReusedError, IdempotencyInFlightError, IdempotencyUnavailableError (the store failed).
   */
  async claim(request: LeaseClaimRequest): Promise<ClaimOutcome> {
    const deadline = performance.now() + (request.waitForTwin ? this.options.inFlightWaitTimeoutMs : 0);
    let pause = TWIN_POLL_FIRST_MS;
    try {
      for (;;) {
        const token = randomUUID();
        let attempt: LeaseAttempt;
        try {
          attempt = await this.stores.get(request.store).claim(request, token);
        } catch (error) {
          throw new IdempotencyUnavailableError(messages.storeFailed(request.store, request.consumer, request.key, (error as Error).message), request.consumer, request.key, {
            cause: error,
          });
        }
        if (attempt.kind === 'claimed') {
          if (attempt.tookOver) {
            this.metrics.recordLease(request.consumer, 'takeover');
          }
          const claim = new OpenLease(
            this.stores.get(request.store),
            request,
            token,
            this.storage,
            (outcome) => this.metrics.recordDelivery(request, outcome),
            { forMs: request.renewLeaseForMs, record: (outcome) => this.metrics.recordLeaseRenewal(request.consumer, outcome) },
            (event) => this.metrics.recordLease(request.consumer, event),
          );
          return { kind: 'claimed', claim };
        }
        if (request.fingerprint !== null && attempt.fingerprint !== null && attempt.fingerprint !== request.fingerprint) {
          throw new IdempotencyKeyReusedError(request.consumer, request.key);
        }
        if (attempt.kind === 'completed') {
          this.logger.log(messages.duplicate(request.consumer, request.key, request.sender));
          this.metrics.recordDelivery(request, 'duplicate');
          return { kind: 'duplicate', response: attempt.response };
        }
        const left = deadline - performance.now();
        if (left <= 0) {
          throw new IdempotencyInFlightError(request.consumer, request.key);
        }
        await sleep(Math.min(pause, left));
        pause = Math.min(pause * 2, TWIN_POLL_MAX_MS);
      }
    } catch (error) {
      this.metrics.recordDelivery(request, failureOutcome(error));
      throw error;
    }
  }
}
