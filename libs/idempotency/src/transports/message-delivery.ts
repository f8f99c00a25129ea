import { type CallHandler, type ExecutionContext, Injectable } from '@nestjs/common';
import { Observable } from 'rxjs';
import type { RecordedResponse } from '../claiming/claim.js';
import { type Delivery, DeliveryCore, type DeliveryEntry, processJson } from '../delivery/delivery-core.js';
import { classify } from '../errors/delivery-error-classes.js';
import { IdempotencyUnsupportedHandlerError } from '../errors/idempotency.errors.js';
import { HandlerPlans } from './handler-plans.js';
import type { FailureAnswer, InboundMessage, MessageTransport, Verdict } from './message-transport.js';
import type { MessagePlan, MessageSource } from './message-plan.js';
import { markReported } from './reported-failures.js';
import { answerRetryAfter } from './http/retry-after.js';
import { transportMessages } from './transport.messages.js';

/**
 * The values a handler's Observable emitted when they were not one (`from([{ page: 1 }, { page: 2 }])`):
 * Nest sends each to a request-reply caller, in order, so each is recorded, and replayed, in order.
 */
class ReplyStream {
  constructor(readonly values: readonly unknown[]) {}

  toJSON(): readonly unknown[] {
    return this.values;
  }
}

/**
 * The headers of a recorded reply stream: the body is the JSON array of its values. A message
 * handler's single reply is recorded without headers, so nothing else recorded for a message
 * handler carries them.
 */
const STREAM_HEADERS: Readonly<Record<string, string>> = { 'idempotent-reply': 'stream' };

/**
 * The message entry of the delivery core, which knows no broker: each transport's adapter reads
 * its messages (key, payload, how to settle); the core claims, the handler runs under the claim,
 * its reply is recorded and committed; a duplicate is answered its recorded reply. Each delivery
 * is then settled with its broker through its adapter: ack, retry after a delay, or dead-letter,
 * by the one classification of the module's errors.
 */
@Injectable()
export class MessageDelivery implements DeliveryEntry<MessageSource, MessagePlan> {
  constructor(
    private readonly core: DeliveryCore,
    private readonly plans: HandlerPlans,
  ) {}

  /**
   * Delivers what an interceptor intercepted, through the first of its plan's adapters that reads
   * it as its own; emits the reply, or each value of a reply stream, as the handler's Observable did.
   */
  handle(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const plan = this.plans.message(context);
    for (const transport of plan.transports) {
      const message = transport.read(context, plan.fanOut);
      if (message) {
        const source: MessageSource = { transport, message, run: () => handlerReply(next.handle()) };
        return plan.keyless?.(context, source) ? next.handle() : emitted(this.deliverUnlessSettled(plan, context, source));
      }
    }
    const handler = `${context.getClass().name}.${context.getHandler().name}`;
    throw new IdempotencyUnsupportedHandlerError(transportMessages.unsupportedContext(handler, context.getType()), handler);
  }

  /**
   * Delivers `message` to the handler of `plan` (a provider's method its framework calls): `run` runs it.
   * Settles the message once, whatever happens.
   * @returns the handler's reply, or the recorded reply of a duplicate.
   */
  deliver(plan: MessagePlan, context: ExecutionContext, transport: MessageTransport, message: InboundMessage, run: () => Promise<unknown>): Promise<unknown> {
    return this.deliverUnlessSettled(plan, context, { transport, message, run });
  }

  /**
   * Delivers a message through the core, unless its adapter knows it settled already
   * (`InboundMessage.settledAlready`): that one is settled as an ack, neither claimed nor handled.
   */
  private deliverUnlessSettled(plan: MessagePlan, context: ExecutionContext, source: MessageSource): Promise<unknown> {
    const { settledAlready } = source.message;
    if (!settledAlready) {
      return this.core.deliver(plan, context, source, this);
    }
    return settledAlready.then(async (settled) => {
      if (!settled) {
        return this.core.deliver(plan, context, source, this);
      }
      await source.message.settle?.({ kind: 'ack' }, plan.handler.consumer);
      return undefined;
    });
  }

  transport({ transport }: MessageSource): string {
    return transport.name;
  }

  async replay(delivery: Delivery<MessageSource, MessagePlan>, { message }: MessageSource, recorded: RecordedResponse): Promise<unknown> {
    await message.settle?.({ kind: 'ack' }, delivery.consumer);
    const reply = replyOf(recorded);
    return message.answering ? message.answering.answer(reply, true) : reply;
  }

  async process(delivery: Delivery<MessageSource, MessagePlan>, { message, run }: MessageSource): Promise<unknown> {
    const { checkReply, answering } = message;
    const result = await processJson(
      delivery,
      async () => {
        const reply = checkReply ? checkReply(await run()) : await run();
        message.beforeCommit?.();
        return answering ? answering.record(reply) : reply;
      },
      (reply) => (reply instanceof ReplyStream ? STREAM_HEADERS : null),
    );
    await message.settle?.({ kind: 'ack' }, delivery.consumer);
    return answering ? answering.answer(result, false) : result;
  }

  /** Settles the failed message with its broker, and answers what its adapter says (GraphQL: with the handler's `retryAfter`). */
  fail(error: unknown, delivery: Delivery<MessageSource, MessagePlan>, { message }: MessageSource): unknown {
    answerRetryAfter(error, delivery.handler.retryAfterSeconds);
    // Only an ack's settle returns a promise (InboundMessage.settle).
    const answer = message.settle?.(verdictFor(error, delivery), delivery.consumer) as FailureAnswer | void;
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

/**
 * The reply of the values a handler's Observable emits until it completes: the value, when it
 * emitted one; else their stream. Rejects with its error.
 */
function handlerReply(handled: Observable<unknown>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const values: unknown[] = [];
    handled.subscribe({
      next: (value) => values.push(value),
      error: reject,
      complete: () => resolve(values.length === 1 ? values[0] : new ReplyStream(values)),
    });
  });
}

/** What Nest sends for a reply, once it came: each value of a reply stream, in order; else the reply. */
function emitted(reply: Promise<unknown>): Observable<unknown> {
  return new Observable((subscriber) => {
    reply.then(
      (value) => {
        for (const each of value instanceof ReplyStream ? value.values : [value]) {
          subscriber.next(each);
        }
        subscriber.complete();
      },
      (error: unknown) => subscriber.error(error),
    );
  });
}

/**
 * A duplicate's reply: the recorded JSON of a message handler's reply, or of each value of its
 * reply stream; or, for a consumer shared with an HTTP route, the response body it recorded,
 * parsed when it is JSON.
 */
function replyOf({ headers, body }: RecordedResponse): unknown {
  if (headers?.['idempotent-reply'] === STREAM_HEADERS['idempotent-reply']) {
    return new ReplyStream(JSON.parse(body!.toString('utf8')) as unknown[]);
  }
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
function verdictFor(error: unknown, { handler, request }: Delivery<MessageSource, MessagePlan>): Verdict {
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
