import { type CallHandler, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import type { ClaimRequest, RecordedResponse } from '../claiming/claim.js';
import { translateDatabaseError } from '../claiming/claim-errors.js';
import { ClaimingService } from '../claiming/claiming.service.js';
import { IdempotencyMetadataAccessor, type ResolvedHandler } from '../decorators/idempotency-metadata.accessor.js';
import { classify, failureOutcome } from '../errors/delivery-error-classes.js';
import { IdempotencyKeyError } from '../errors/idempotency-key.error.js';
import { IdempotencyUnsupportedHandlerError } from '../errors/idempotency-unsupported-handler.error.js';
import { transportMessages } from './transport.messages.js';
import { readPath, toMessageKey } from '../keys/message-key.js';
import { LeaseClaimingService, type LeaseClaimRequest } from '../leasing/lease-claiming.service.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import { ResponseRecording } from '../recording/response-recording.js';
import { IdempotencyTracing } from '../tracing/idempotency-tracing.js';
import { claimByMode, claimRequestFor } from './claim-request.js';
import { markReported } from './reported-failures.js';
import { type InboundMessage, MESSAGE_TRANSPORTS, type MessageTransport, type Verdict } from './message-transport.js';

/**
 * The claim core of every message transport, which knows none of them: claim the message, run the
 * handler under the claim, record its reply and commit; or answer the recorded reply to a
 * duplicate. Each delivery is then settled with its broker through its adapter: ack, retry after
 * a delay, or dead-letter, by the one classification of the module's errors.
 */
@Injectable()
export class MessageDelivery {
  constructor(
    private readonly claims: ClaimingService,
    private readonly leases: LeaseClaimingService,
    private readonly recording: ResponseRecording,
    private readonly accessor: IdempotencyMetadataAccessor,
    private readonly metrics: IdempotencyMetricsService,
    private readonly tracing: IdempotencyTracing,
    @Inject(MESSAGE_TRANSPORTS) private readonly transports: readonly MessageTransport[],
  ) {}

  /** Delivers what an interceptor intercepted, through the first adapter that reads it as its own. */
  handle(context: ExecutionContext, next: CallHandler): Promise<unknown> {
    for (const transport of this.transports) {
      const message = transport.read(context);
      if (message) {
        return this.deliver(this.accessor.resolve(context), context, transport, message, () => lastValueFrom(next.handle(), { defaultValue: undefined }));
      }
    }
    const handler = `${context.getClass().name}.${context.getHandler().name}`;
    throw new IdempotencyUnsupportedHandlerError(transportMessages.unsupportedContext(handler, context.getType()), handler);
  }

  /**
   * Delivers `message` to `handler`: `run` runs it. Settles the message once, whatever happens.
   * @returns the handler's reply, or the recorded reply of a duplicate.
   */
  async deliver(
    handler: ResolvedHandler,
    context: ExecutionContext,
    transport: MessageTransport,
    message: InboundMessage,
    run: () => Promise<unknown>,
  ): Promise<unknown> {
    const trace = this.tracing.start({ consumer: handler.consumer, mode: handler.mode, transport: transport.name });
    let request: LeaseClaimRequest | undefined;
    try {
      try {
        request = claimRequestFor(
          handler,
          context,
          { key: () => readKey(handler, context, transport, message), request: message.request, defaultInFlight: transport.defaultInFlight ?? 'wait' },
          this.metrics,
        );
      } catch (error) {
        trace.fail(error);
        throw error;
      }
      const claimed = request;
      const outcome = await trace.claim(claimed, () => claimByMode(handler, claimed, this.claims, this.leases, this.recording));
      if (outcome.kind === 'duplicate') {
        message.settle?.({ kind: 'ack' }, handler.consumer);
        const recorded = replyOf(outcome.response);
        return message.replay ? message.replay(recorded) : recorded;
      }
      const { claim } = outcome;
      let result: unknown;
      try {
        const { checkReply } = message;
        result = await claim.run(checkReply ? async () => checkReply(await run()) : run);
      } catch (error) {
        const failure = translateDatabaseError(error, claimed);
        await claim.rollback(failureOutcome(failure), failure);
        throw failure;
      }
      const reply = JSON.stringify(result);
      await claim.commit({ status: null, headers: null, body: reply === undefined ? null : Buffer.from(reply) });
      message.settle?.({ kind: 'ack' }, handler.consumer);
      return result;
    } catch (error) {
      const answer = message.settle?.(verdictFor(error, handler, request), handler.consumer);
      if (answer && 'reply' in answer) {
        return answer.reply;
      }
      if (answer && 'reported' in answer) {
        markReported(error);
        throw error;
      }
      throw answer?.error ?? error;
    }
  }
}

/**
 * A duplicate's reply: the recorded JSON of a message handler's reply; or, for a consumer shared
 * with an HTTP route, the response body it recorded, parsed when it is JSON.
 */
function replyOf({ body }: RecordedResponse): unknown {
  if (body === null || body.length === 0) {
    return undefined;
  }
  const text = body.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A message that can never succeed is dead-lettered; any other failure is retried after a delay. */
function verdictFor(error: unknown, handler: ResolvedHandler, request: ClaimRequest | undefined): Verdict {
  const cause = { consumer: handler.consumer, key: request?.key, reason: error instanceof Error ? error.message : String(error) };
  if (!request || classify(error)?.deadLetter) {
    return { kind: 'dead-letter', ...cause };
  }
  return {
    kind: 'retry',
    attemptKey: `${request.consumer}\u0000${request.key}`,
    maxAttempts: handler.maxAttempts,
    retryDelayMs: handler.retryDelayMs,
    ...cause,
  };
}

/** The message's key: the handler's `key` option, else the broker's own message id. */
function readKey(handler: ResolvedHandler, context: ExecutionContext, transport: MessageTransport, message: InboundMessage): string {
  const source = handler.key;
  if (typeof source === 'function') {
    return toMessageKey(source(context), 'the key function');
  }
  if (source && 'body' in source) {
    return toMessageKey(readPath(message.payload, source.body), `'${source.body}' in the message payload`);
  }
  if (source) {
    return toMessageKey(message.header(source.header), `the ${source.header} message header`);
  }
  if (transport.messageIdSource === undefined) {
    throw new IdempotencyKeyError(transportMessages.unsupportedTransport(transport.name), 'transport');
  }
  return toMessageKey(message.messageId, transport.messageIdSource);
}
