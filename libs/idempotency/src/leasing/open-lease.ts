import { Logger } from '@nestjs/common';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { ClaimRequest, RecordedResponse } from '../claiming/claim.js';
import { SettlingDelivery } from '../claiming/settling-delivery.js';
import type { ActiveClaim } from '../context/idempotency.context.js';
import { IdempotencyLeaseLostError } from '../errors/idempotency.errors.js';
import { leaseMessages } from './lease.messages.js';
import { downstreamKey } from '../keys/downstream-key.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import type { LeaseRenewalOutcome } from '../metrics/idempotency-metrics.service.js';
import type { LeaseEvent } from '../metrics/idempotency-metrics.service.js';
import type { LeaseRequest, LeaseStore } from './lease-store.js';

/** How a lease is renewed while its handler runs. */
export interface LeaseRenewal {
  /** How long after the claim the lease is renewed; 0: never. */
  readonly forMs: number;
  /** Counts one renewal by its outcome. */
  readonly record: (outcome: LeaseRenewalOutcome) => void;
}

/**
 * A lease this delivery holds under `token`, not settled yet: run the handler (with no claim
 * transaction or connection held), then complete the message with the response to record, or
 * release it. Every step is checked against the token: a holder whose lease was taken over
 * cannot complete, and its delivery fails with IdempotencyLeaseLostError; a holder whose lease
 * merely expired, nobody having taken it over, still completes.
 *
 * Until it settles, the lease is renewed every third of the lease (`store.extend()`, under the
 * token), up to `renewal.forMs` after the claim, when the lease is let expire: a slow handler
 * keeps its message, a hung one lets go of it in the end. Renewals run one at a time, with the
 * handler's own `extendLease()` calls in the same line, so none shortens what another set.
 */
export class OpenLease extends SettlingDelivery {
  /** A rollback releases the lease only: the handler's effects are elsewhere and stay. */
  readonly rollbackUndoesWork = false;
  protected readonly active: ActiveClaim;
  private readonly logger = new Logger('Idempotency');
  private readonly claimedAt = performance.now();
  /** When the lease expires, by this process's clock, as the claim, the last renewal or extension set it. */
  private expiresAt: number;
  /** The extensions of the lease, one at a time. */
  private extending: Promise<unknown> = Promise.resolve();
  private renewalTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: LeaseStore,
    private readonly request: ClaimRequest & LeaseRequest,
    private readonly token: string,
    storage: AsyncLocalStorage<ActiveClaim>,
    onSettled: (outcome: DeliveryOutcome, recorded?: RecordedResponse) => void,
    private readonly renewal: LeaseRenewal = { forMs: 0, record: () => undefined },
    private readonly onLeaseEvent: (event: LeaseEvent) => void = () => undefined,
  ) {
    super(storage, onSettled);
    this.expiresAt = this.claimedAt + request.leaseMs;
    this.active = {
      consumer: request.consumer,
      key: request.clientKey ?? request.key,
      sender: request.sender,
      downstreamKey: downstreamKey(request),
      lease: { leaseMs: request.leaseMs, extend: (leaseMs) => this.extend(leaseMs) },
    };
    this.scheduleRenewal();
  }

  /** @throws IdempotencyLeaseLostError when another delivery took the lease over; the store's error when it fails. */
  protected async complete(response: RecordedResponse): Promise<void> {
    if (!(await this.store.complete(this.request, this.token, response))) {
      this.onLeaseEvent('refusedCompletion');
      throw this.lost();
    }
  }

  /**
   * Releases the lease so that the next delivery processes at once; a lease taken over stays with
   * its new holder. A store that fails to release leaves the lease to expire.
   */
  protected undo(): Promise<boolean> {
    return this.store.release(this.request, this.token).catch(() => false);
  }

  /** The handler's `extendLease()`: the lease's expiry `leaseMs` from now, whatever the renewal bound. */
  private extend(leaseMs: number): Promise<void> {
    return this.inLine(async () => {
      const asked = performance.now();
      if (this.settled || !(await this.store.extend(this.request, this.token, leaseMs))) {
        throw this.lost();
      }
      this.expiresAt = asked + leaseMs;
    });
  }

  private scheduleRenewal(): void {
    const bound = this.claimedAt + this.renewal.forMs;
    if (this.settled || this.renewal.forMs <= 0 || this.expiresAt >= bound) {
      return;
    }
    this.renewalTimer = setTimeout(() => void this.inLine(() => this.renew(bound)), Math.max(1, this.request.leaseMs / 3));
    // A renewal never keeps the process up: a process going down leaves its leases to expire.
    this.renewalTimer.unref();
  }

  /** Moves the expiry a lease on, or up to `bound` when that is nearer; then schedules the next renewal. */
  private async renew(bound: number): Promise<void> {
    const now = performance.now();
    const until = Math.min(now + this.request.leaseMs, bound);
    if (this.settled || until <= this.expiresAt) {
      this.scheduleRenewal();
      return;
    }
    let renewed: boolean;
    try {
      renewed = await this.store.extend(this.request, this.token, Math.ceil(until - now));
    } catch (error) {
      if (!this.settled) {
        this.renewal.record('failed');
        this.logger.warn(leaseMessages.leaseRenewalFailed(this.request.consumer, this.request.key, (error as Error)?.message ?? String(error)));
        this.scheduleRenewal();
      }
      return;
    }
    if (this.settled) {
      // Completed or released meanwhile: the store's answer says nothing of a takeover.
      return;
    }
    if (!renewed) {
      this.renewal.record('lost');
      this.logger.warn(leaseMessages.leaseRenewalLost(this.request.consumer, this.request.key, performance.now() - this.claimedAt));
      return;
    }
    this.renewal.record('renewed');
    this.expiresAt = until;
    this.scheduleRenewal();
  }

  /** Runs `extension` after those before it, whatever became of them. */
  private inLine<T>(extension: () => Promise<T>): Promise<T> {
    const next = this.extending.then(extension, extension);
    this.extending = next.catch(() => undefined);
    return next;
  }

  /** Settled, the lease is renewed no more. */
  protected override settle(): void {
    super.settle();
    clearTimeout(this.renewalTimer);
  }

  private lost(): IdempotencyLeaseLostError {
    return new IdempotencyLeaseLostError(this.request.consumer, this.request.key, {
      heldMs: performance.now() - this.claimedAt,
      leaseMs: this.request.leaseMs,
      renewLeaseForMs: this.renewal.forMs,
    });
  }
}
