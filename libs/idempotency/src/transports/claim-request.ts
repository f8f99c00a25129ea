import type { ExecutionContext } from '@nestjs/common';
import type { ClaimingService, ClaimOutcome } from '../claiming/claiming.service.js';
import type { ResolvedHandler } from '../decorators/idempotency-metadata.accessor.js';
import type { InFlightPolicy } from '../decorators/idempotent-handler.options.js';
import { OTHER_SENDERS } from '../metrics/metrics.constants.js';
import { fingerprint } from '../keys/fingerprint.js';
import { toScope, toSenderName } from '../keys/message-key.js';
import { ANONYMOUS_SCOPE, scopedMessageId } from '../keys/scoped-key.js';
import { IdempotencyKeyError } from '../errors/idempotency-key.error.js';
import { keyMessages } from '../keys/key.messages.js';
import type { LeaseClaimingService, LeaseClaimRequest } from '../leasing/lease-claiming.service.js';
import type { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import type { ResponseRecording } from '../recording/response-recording.js';

/** What a transport knows of a delivery: where its key is, what identifies its payload, its default policy. */
export interface DeliveryReading {
  /** The key; throws IdempotencyKeyError when there is none usable. */
  readonly key: () => string;
  /** What the `'request'` fingerprint covers: HTTP's method, URL and body (messages have none). */
  readonly request?: () => unknown;
  readonly defaultInFlight: InFlightPolicy;
  /**
   * HTTP: a scope function that answers nothing (`undefined` or `null`) means a caller who is not
   * signed in, whose key is claimed in the anonymous callers' namespace; this is told the handler
   * and the key. Unset (messages): such a delivery is refused, since it cannot say whose message it is.
   */
  readonly onAnonymousCaller?: (handler: ResolvedHandler, key: string) => void;
}

/**
 * The claim request of one delivery to `handler`: its key, scoped to the caller when the handler
 * has a `scope` (over HTTP, a caller the scope function cannot name is an anonymous one). A
 * delivery without a usable key, scope or sender is counted as rejected, and its
 * IdempotencyKeyError thrown.
 */
export function claimRequestFor(
  handler: ResolvedHandler,
  context: ExecutionContext,
  reading: DeliveryReading,
  metrics: IdempotencyMetricsService,
): LeaseClaimRequest {
  let sender: string = OTHER_SENDERS;
  try {
    sender = typeof handler.sender === 'function' ? toSenderName(handler.sender(context), 'the sender function') : handler.sender;
    const { fingerprint: covers } = handler;
    const key = reading.key();
    const scope = handler.scope ? scopeOf(handler, handler.scope(context), key, reading) : undefined;
    return {
      consumer: handler.consumer,
      key: scope === undefined ? key : scopedMessageId(key, scope),
      clientKey: scope === undefined ? undefined : key,
      sender,
      fingerprint: covers === false ? null : fingerprint(covers === 'request' ? reading.request?.() : covers(context)),
      retentionMs: handler.retentionMs,
      waitForTwin: (handler.inFlight ?? reading.defaultInFlight) === 'wait',
      isolationLevel: handler.isolationLevel,
      savepoint: handler.recordErrors.size > 0,
      leaseMs: handler.leaseMs,
      renewLeaseForMs: handler.renewLeaseForMs,
      store: handler.store,
    };
  } catch (error) {
    metrics.recordDelivery({ consumer: handler.consumer, sender }, 'rejected');
    throw error;
  }
}

/** The scope of a delivery whose scope function answered `answer`: the caller's identity, checked, or the anonymous callers' scope. */
function scopeOf(handler: ResolvedHandler, answer: string | number | undefined | null, key: string, reading: DeliveryReading): string {
  if (answer !== undefined && answer !== null) {
    return toScope(answer, 'the scope function');
  }
  if (!reading.onAnonymousCaller) {
    throw new IdempotencyKeyError(keyMessages.scopeUnanswered(answer), 'the scope function');
  }
  reading.onAnonymousCaller(handler, key);
  return ANONYMOUS_SCOPE;
}

/**
 * Claims a delivery by the protocol of the handler's mode. Both modes and every store go through
 * `recording`: a duplicate's response is opened, a won claim records what the handler's `record`
 * policy keeps, sealed when encryption is on.
 */
export async function claimByMode(
  handler: ResolvedHandler,
  request: LeaseClaimRequest,
  claims: ClaimingService,
  leases: LeaseClaimingService,
  recording: ResponseRecording,
): Promise<ClaimOutcome> {
  const outcome = handler.mode === 'lease' ? await leases.claim(request) : await claims.claim(request);
  return recording.apply(outcome, request, handler.record);
}
