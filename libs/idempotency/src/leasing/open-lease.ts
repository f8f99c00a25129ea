import type { AsyncLocalStorage } from 'node:async_hooks';
import type { ClaimRequest, OpenDelivery, RecordedResponse } from '../claiming/claim.js';
import type { ActiveClaim } from '../context/idempotency.context.js';
import { IdempotencyLeaseLostError } from '../errors/idempotency-lease-lost.error.js';
import { downstreamKey } from '../keys/downstream-key.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import type { LeaseEvent } from '../metrics/idempotency-metrics.service.js';
import type { LeaseRequest, LeaseStore } from './lease-store.js';

/**
 * A lease this delivery holds under `token`, not settled yet: run the handler (with no claim
 * transaction or connection held), then complete the message with the response to record, or
 * release it. Every step is checked against the token: a holder whose lease was taken over
 * cannot complete, and its delivery fails with IdempotencyLeaseLostError.
 */
export class OpenLease implements OpenDelivery {
  private settled = false;
  private readonly active: ActiveClaim;

  constructor(
    private readonly store: LeaseStore,
    private readonly request: ClaimRequest & LeaseRequest,
    private readonly token: string,
    private readonly storage: AsyncLocalStorage<ActiveClaim>,
    private readonly onSettled: (outcome: DeliveryOutcome) => void,
    private readonly onLeaseEvent: (event: LeaseEvent) => void = () => undefined,
  ) {
    this.active = {
      consumer: request.consumer,
      key: request.key,
      sender: request.sender,
      downstreamKey: downstreamKey(request),
      lease: { leaseMs: request.leaseMs, extend: (leaseMs) => this.extend(leaseMs) },
    };
  }

  run<T>(handle: () => Promise<T>): Promise<T> {
    return this.storage.run(this.active, handle);
  }

  /** @throws IdempotencyLeaseLostError when another delivery took the lease over; the store's error when it fails. */
  async commit(response: RecordedResponse): Promise<void> {
    if (this.settled) {
      return;
    }
    this.settled = true;
    let completed = false;
    try {
      completed = await this.store.complete(this.request, this.token, response);
    } finally {
      this.onSettled(completed ? 'processed' : 'failed');
    }
    if (!completed) {
      this.onLeaseEvent('refusedCompletion');
      throw new IdempotencyLeaseLostError(this.request.consumer, this.request.key);
    }
  }

  /**
   * Releases the lease so that the next delivery processes at once; a lease taken over stays with
   * its new holder. A store that fails to release leaves the lease to expire.
   */
  async rollback(outcome: Exclude<DeliveryOutcome, 'processed' | 'duplicate'>): Promise<void> {
    if (this.settled) {
      return;
    }
    this.settled = true;
    await this.store.release(this.request, this.token).catch(() => false);
    this.onSettled(outcome);
  }

  private async extend(leaseMs: number): Promise<void> {
    if (this.settled || !(await this.store.extend(this.request, this.token, leaseMs))) {
      throw new IdempotencyLeaseLostError(this.request.consumer, this.request.key);
    }
  }
}
