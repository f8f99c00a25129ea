import type { ExecutionContext } from '@nestjs/common';
import type { ClaimOutcome, ClaimRequest, RecordedResponse } from '../claiming/claim.js';
import type { ClaimConnection, TransactionStatements } from '../data-layers/data-layer.js';
import type { ResolvedHandler } from './resolved-handler.js';
import type { InFlightPolicy } from '../options/handler-values.js';
import { IdempotencyKeyError } from '../errors/idempotency.errors.js';
import { fingerprint } from '../keys/fingerprint.js';
import { keyMessages } from '../keys/key.messages.js';
import { toScope, toSenderName } from '../keys/message-key.js';
import { ANONYMOUS_SCOPE, scopedMessageId } from '../keys/scoped-key.js';
import type { LeaseClaimRequest } from '../leasing/lease-claiming.service.js';

/**
 * How an entry (HTTP, the message transports) reads its deliveries of a handler, each from its
 * `source` (an HTTP exchange, a broker message): told the core once per handler, at start-up.
 * @internal
 */
export interface EntryReading<S> {
  /** The delivery's key, read where the handler's `key` option says; throws IdempotencyKeyError when there is none usable. */
  readonly key: (context: ExecutionContext, source: S) => string;
  /** What the `'request'` fingerprint covers: HTTP's method, URL and body; a message's `request` (a GraphQL mutation's arguments; other messages have none). */
  readonly request?: (source: S) => unknown;
  readonly defaultInFlight: InFlightPolicy;
  /**
   * HTTP: a scope function that answers nothing (`undefined` or `null`) means a caller who is not
   * signed in, whose key is claimed in the anonymous callers' namespace; this is told the key.
   * Unset (messages): such a delivery is refused, since it cannot say whose message it is.
   */
  readonly onAnonymousCaller?: (key: string) => void;
  /**
   * HTTP: the caller that a handler whose key is not scoped to it answers to (the module's `scope`),
   * bound into its `'request'` fingerprint, so that its record is never replayed to another caller:
   * another caller's request with the same key is a reused key.
   */
  readonly caller?: (context: ExecutionContext) => unknown;
  /** `run()`: the caller's own transaction, when it gives one, which the claim joins. */
  readonly callerTransaction?: (source: S) => TransactionStatements | undefined;
  /** `run()` inside an idempotent handler: the handler's claim, which the claim joins. */
  readonly handlerClaim?: (source: S) => ClaimConnection | undefined;
}

/**
 * One handler's deliveries as compiled at start-up, as Nest compiles a route: everything the
 * handler's options decide is decided here once, so that a delivery runs only what its handler uses.
 * @internal
 */
export interface HandlerPlan<S> {
  readonly handler: ResolvedHandler;
  /**
   * The handler's default name before 0.3.0 whose stored ids its claims also recognise: set once
   * at start-up, when the store's names have been read (`StoredConsumers`).
   */
  formerConsumer: string | undefined;
  /** The delivery's sender: the handler's fixed name, or its sender function's answer, checked. */
  readonly sender: (context: ExecutionContext) => string;
  /** The claim request of a delivery from `sender`: its key read (and scoped, when the handler has a scope), its fingerprint taken when the handler compares one. */
  readonly request: (context: ExecutionContext, source: S, sender: string) => LeaseClaimRequest;
  /** Claims by the protocol of the handler's mode. */
  readonly claim: (request: LeaseClaimRequest) => Promise<ClaimOutcome>;
  /** What is stored of a response (cut to the `record` policy, sealed); undefined: the response as it is. */
  readonly toStore: ((request: ClaimRequest, response: RecordedResponse) => RecordedResponse) | undefined;
}

/** The sender reader of `handler`. */
export function senderReader(handler: ResolvedHandler): (context: ExecutionContext) => string {
  const { sender } = handler;
  if (typeof sender === 'function') {
    return (context) => toSenderName(sender(context), 'the sender function');
  }
  return () => sender;
}

/**
 * The claim request builder of `handler` read by `reading`: the key, scoped to the caller when the
 * handler has a `scope` (over HTTP, a caller the scope function cannot name is an anonymous one),
 * the fingerprint, and the handler's fixed settings.
 */
export function requestBuilder<S>(handler: ResolvedHandler, reading: EntryReading<S>, names: Pick<HandlerPlan<S>, 'formerConsumer'>): HandlerPlan<S>['request'] {
  const { consumer, retentionMs, isolationLevel, leaseMs, renewLeaseForMs, store, scope } = handler;
  const waitForTwin = (handler.inFlight ?? reading.defaultInFlight) === 'wait';
  const savepoint = handler.recordErrors.size > 0;
  const readKey = reading.key;
  const fingerprintOf = fingerprintReader(handler, reading);
  const { callerTransaction, handlerClaim } = reading;
  const claimRequest = (key: string, clientKey: string | undefined, context: ExecutionContext, source: S, sender: string) => ({
    consumer,
    formerConsumer: names.formerConsumer,
    key,
    clientKey,
    sender,
    fingerprint: fingerprintOf(context, source),
    retentionMs,
    waitForTwin,
    isolationLevel,
    savepoint,
    callerTransaction: callerTransaction?.(source),
    handlerClaim: handlerClaim?.(source),
    leaseMs,
    renewLeaseForMs,
    store,
  });
  if (!scope) {
    return (context, source, sender) => claimRequest(readKey(context, source), undefined, context, source, sender);
  }
  const { onAnonymousCaller } = reading;
  return (context, source, sender) => {
    const key = readKey(context, source);
    const answer = scope(context);
    let caller: string;
    if (answer !== undefined && answer !== null) {
      caller = toScope(answer, 'the scope function');
    } else if (onAnonymousCaller) {
      onAnonymousCaller(key);
      caller = ANONYMOUS_SCOPE;
    } else {
      throw new IdempotencyKeyError(keyMessages.scopeUnanswered(answer), 'the scope function');
    }
    return claimRequest(scopedMessageId(key, caller), key, context, source, sender);
  };
}

/**
 * What a delivery's fingerprint is taken of: nothing (null), the entry's request (with the caller,
 * where the entry binds one), or the handler's function's answer. A message that has no request
 * (all but a GraphQL mutation) has nothing to take it of.
 */
function fingerprintReader<S>(handler: ResolvedHandler, reading: EntryReading<S>): (context: ExecutionContext, source: S) => string | null {
  const covers = handler.fingerprint;
  if (covers === false) {
    return () => null;
  }
  if (covers === 'request') {
    const { request, caller } = reading;
    if (caller) {
      return (context, source) => fingerprint({ request: request?.(source), caller: caller(context) ?? null });
    }
    return (_context, source) => {
      const covered = request?.(source);
      return covered === undefined ? null : fingerprint(covered);
    };
  }
  return (context) => fingerprint(covers(context));
}
