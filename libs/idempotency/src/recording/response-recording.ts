import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ClaimRequest, CommitOptions, OpenDelivery, RecordedResponse } from '../claiming/claim.js';
import type { ClaimOutcome } from '../claiming/claiming.service.js';
import type { RecordPolicy } from '../decorators/idempotent-handler.options.js';
import { IdempotencyRecordUnreadableError } from '../errors/idempotency-record-unreadable.error.js';
import { RESOLVED_OPTIONS, type ResolvedIdempotencyOptions } from '../idempotency.options.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import { openResponse, sealResponse, UnreadableRecord } from './response-seal.js';

/**
 * What is kept of an answer, and how, between the transports and the stores: every response on
 * its way to a store (the PostgreSQL claim, a lease store) passes here to be cut to the handler's
 * `record` policy and sealed when the module's `encryption` is on; every recorded response on its
 * way to a duplicate passes here to be opened. The stores keep what they are given.
 * @internal
 */
@Injectable()
export class ResponseRecording {
  private readonly logger = new Logger('Idempotency');

  constructor(@Inject(RESOLVED_OPTIONS) private readonly options: ResolvedIdempotencyOptions) {}

  /**
   * The claim's outcome with its recorded response opened (a duplicate), or its delivery set to
   * record what `policy` keeps, sealed (a claim won).
   * @throws IdempotencyRecordUnreadableError when a duplicate's record cannot be opened.
   */
  apply(outcome: ClaimOutcome, request: ClaimRequest, policy: RecordPolicy): ClaimOutcome {
    if (outcome.kind === 'duplicate') {
      return { kind: 'duplicate', response: this.open(request, outcome.response) };
    }
    if (policy === 'response' && this.options.keyring === null) {
      // The whole response, as it is: nothing to cut or seal on its way to the store.
      return outcome;
    }
    return { kind: 'claimed', claim: new RecordingDelivery(outcome.claim, (response) => this.toStore(request, policy, response)) };
  }

  /** What is stored of `response`: cut to `policy`, then sealed. */
  toStore(request: ClaimRequest, policy: RecordPolicy, response: RecordedResponse): RecordedResponse {
    const kept: RecordedResponse = policy === 'status' ? { status: response.status, headers: null, body: null } : response;
    return this.options.keyring === null ? kept : sealResponse(this.options.keyring, request, kept);
  }

  /** The response a record holds. @throws IdempotencyRecordUnreadableError when no configured key can open it. */
  open(request: ClaimRequest, stored: RecordedResponse): RecordedResponse {
    const opened = openResponse(this.options.keyring, request, stored);
    if (opened instanceof UnreadableRecord) {
      const error = new IdempotencyRecordUnreadableError(
        request.consumer,
        request.key,
        opened.reason,
        opened.keyId,
        opened.formatVersion,
        [...(this.options.keyring?.keys.keys() ?? [])],
      );
      this.logger.error(error.message);
      throw error;
    }
    return opened;
  }
}

/** A delivery whose commit records what the policy keeps, sealed. */
class RecordingDelivery implements OpenDelivery {
  constructor(
    private readonly delivery: OpenDelivery,
    private readonly toStore: (response: RecordedResponse) => RecordedResponse,
  ) {}

  get rollbackUndoesWork(): boolean {
    return this.delivery.rollbackUndoesWork;
  }

  run<T>(handle: () => Promise<T>): Promise<T> {
    return this.delivery.run(handle);
  }

  async commit(response: RecordedResponse, options?: CommitOptions): Promise<void> {
    let stored: RecordedResponse;
    try {
      stored = this.toStore(response);
    } catch (error) {
      await this.delivery.rollback('failed');
      throw error;
    }
    await this.delivery.commit(stored, options);
  }

  rollback(outcome: Exclude<DeliveryOutcome, 'processed' | 'duplicate'>, cause?: unknown): Promise<void> {
    return this.delivery.rollback(outcome, cause);
  }
}
