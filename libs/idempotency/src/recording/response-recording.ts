import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ClaimRequest, RecordedResponse } from '../claiming/claim.js';
import type { RecordPolicy } from '../options/handler-values.js';
import { IdempotencyRecordUnreadableError } from '../errors/idempotency.errors.js';
import { openResponse, sealResponse, UnreadableRecord } from './response-seal.js';
import { RECORDING_OPTIONS, type ResolvedRecordingOptions } from './recording.options.js';

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

  constructor(@Inject(RECORDING_OPTIONS) private readonly options: ResolvedRecordingOptions) {}

  /**
   * How a won claim of a handler whose `record` policy is `policy` turns its response into what
   * is stored: cut to the policy, then sealed; undefined when the whole response is stored as it is
   * (policy `response`, no encryption), decided once per handler at start-up.
   */
  storing(policy: RecordPolicy): ((request: ClaimRequest, response: RecordedResponse) => RecordedResponse) | undefined {
    if (policy === 'response' && this.options.keyring === null) {
      return undefined;
    }
    return (request, response) => this.toStore(request, policy, response);
  }

  /** What is stored of `response`: cut to `policy`, then sealed. */
  private toStore(request: ClaimRequest, policy: RecordPolicy, response: RecordedResponse): RecordedResponse {
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
