import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { ClaimOutcome, ClaimRequest } from '../claiming/claim.js';
import { DeliveryClaiming } from '../claiming/delivery-claiming.js';
import type { ActiveClaim } from '../context/idempotency.context.js';
import { CLAIM_STORAGE } from '../data-layers/data-layer.js';
import { IdempotencyUnavailableError } from '../errors/idempotency.errors.js';
import { leaseMessages } from './lease.messages.js';
import { CLAIM_OPTIONS, type ResolvedClaimOptions } from '../claiming/claim.options.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import type { LeaseAttempt, LeaseRequest } from './lease-store.js';
import { LeaseStores } from './lease-stores.js';
import { OpenLease } from './open-lease.js';
import { ReplayCache } from '../replay-cache/replay-cache.js';

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
 * handler's `renewLeaseFor` after the claim. A twin whose lease is live is answered as in flight
 * (`reject`) or waited for (`wait`, polling the store without holding anything), as
 * `DeliveryClaiming` does. The store alone decides: a twin in this process
 * is no exception, as a holder that hangs must not keep its message from the others once its
 * lease runs out. The model of this protocol, checked with spin, is
 * `lease-protocol.pml` beside this file.
 */
@Injectable()
export class LeaseClaimingService extends DeliveryClaiming<LeaseClaimRequest> {
  constructor(
    @Inject(CLAIM_OPTIONS) options: ResolvedClaimOptions,
    @Inject(CLAIM_STORAGE) private readonly storage: AsyncLocalStorage<ActiveClaim>,
    private readonly stores: LeaseStores,
    private readonly metrics: IdempotencyMetricsService,
    cache: ReplayCache,
  ) {
    super(options, cache);
  }

  /**
   * Takes the lease of `request`'s message, or finds it completed.
   * @throws IdempotencyUnavailableError when the store failed.
   */
  protected async tryOnce(request: LeaseClaimRequest): Promise<ClaimOutcome | undefined> {
    const store = this.stores.get(request.store);
    const token = randomUUID();
    const claimedAt = this.cache.now();
    let attempt: LeaseAttempt;
    try {
      attempt = await store.claim(request, token);
    } catch (error) {
      throw new IdempotencyUnavailableError(leaseMessages.storeFailed(request.store, request.consumer, request.key, (error as Error).message), request.consumer, request.key, {
        cause: error,
      });
    }
    if (attempt.kind === 'claimed') {
      if (attempt.tookOver) {
        this.metrics.recordLease(request.consumer, 'takeover');
      }
      const claim = new OpenLease(
        store,
        request,
        token,
        this.storage,
        this.settled(request, claimedAt),
        { forMs: request.renewLeaseForMs, record: (outcome) => this.metrics.recordLeaseRenewal(request.consumer, outcome) },
        (event) => this.metrics.recordLease(request.consumer, event),
      );
      return { kind: 'claimed', claim };
    }
    this.refuseReusedKey(request, attempt.fingerprint);
    return attempt.kind === 'completed' ? this.replay(request, attempt.response) : undefined;
  }
}
