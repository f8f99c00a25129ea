import { type CallHandler, type ExecutionContext, Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { from, lastValueFrom, mergeMap, type Observable, of, toArray } from 'rxjs';
import type { RecordedResponse } from '../claiming/claim.js';
import { type Delivery, DeliveryCore, type DeliveryEntry, processJson } from '../delivery/delivery-core.js';
import { type HandlerPlan, HandlerPlans } from '../delivery/handler-plan.js';
import { IdempotencyMetadataAccessor, type ResolvedHandler } from '../decorators/idempotency-metadata.accessor.js';
import { IdempotencyExplorer } from '../discovery/idempotency.explorer.js';
import { classify } from '../errors/delivery-error-classes.js';
import { IdempotencyKeyError, IdempotencyUnsupportedHandlerError } from '../errors/idempotency.errors.js';
import { keyAbsence, type KeyLookup, keyReader, readPath, toMessageKey } from '../keys/message-key.js';
import { type InboundMessage, MESSAGE_TRANSPORTS, type MessageTransport, type Verdict } from './message-transport.js';
import { markReported } from './reported-failures.js';
import { answerRetryAfter } from './http/retry-after.js';
import { transportMessages } from './transport.messages.js';

/** One message to an idempotent handler, as the core hands it back to this entry. */
interface MessageSource {
  readonly transport: MessageTransport;
  readonly message: InboundMessage;
  /** Runs the handler. */
  readonly run: () => Promise<unknown>;
}

/** A message handler's plan: the core's, and, for a GraphQL mutation whose key is optional, whether a delivery carries none. */
interface MessagePlan extends HandlerPlan<MessageSource> {
  readonly keyless: ((context: ExecutionContext, source: MessageSource) => boolean) | undefined;
}

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
export class MessageDelivery implements DeliveryEntry<MessageSource>, OnApplicationBootstrap {
  private readonly plans = new HandlerPlans<MessagePlan>();
  /** The plans of provider handlers (BullMQ, SQS), whose calls name their handler as resolved. */
  private readonly byHandler = new WeakMap<ResolvedHandler, MessagePlan>();

  constructor(
    private readonly core: DeliveryCore,
    private readonly accessor: IdempotencyMetadataAccessor,
    private readonly explorer: IdempotencyExplorer,
    @Inject(MESSAGE_TRANSPORTS) private readonly transports: readonly MessageTransport[],
  ) {}

  /** Compiles the plan of every idempotent message handler. */
  onApplicationBootstrap(): void {
    for (const { handler, patterns, provider, target, methodName } of this.explorer.discovered()) {
      if (provider) {
        this.planOf(handler, this.transports.find(({ name }) => name === provider.kind.transport));
      } else if (patterns) {
        this.plans.set(target, target.prototype[methodName] as object, this.planOf(handler));
      }
    }
  }

  /**
   * Delivers what an interceptor intercepted, through the first adapter that reads it as its own;
   * emits the reply, or each value of a reply stream, as the handler's Observable did.
   */
  handle(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    for (const transport of this.transports) {
      const message = transport.read(context);
      if (message) {
        const target = context.getClass();
        const method = context.getHandler();
        const plan = this.plans.get(target, method) ?? this.plans.set(target, method, this.planOf(this.accessor.resolve(context), transport));
        const source: MessageSource = { transport, message, run: async () => replyOfValues(await lastValueFrom(next.handle().pipe(toArray()))) };
        return plan.keyless?.(context, source) ? next.handle() : from(this.core.deliver(plan, context, source, this)).pipe(mergeMap(emitted));
      }
    }
    const handler = `${context.getClass().name}.${context.getHandler().name}`;
    throw new IdempotencyUnsupportedHandlerError(transportMessages.unsupportedContext(handler, context.getType()), handler);
  }

  /**
   * Delivers `message` to `handler` (a provider's method its framework calls): `run` runs it.
   * Settles the message once, whatever happens.
   * @returns the handler's reply, or the recorded reply of a duplicate.
   */
  deliver(handler: ResolvedHandler, context: ExecutionContext, transport: MessageTransport, message: InboundMessage, run: () => Promise<unknown>): Promise<unknown> {
    return this.core.deliver(this.planOf(handler, transport), context, { transport, message, run }, this);
  }

  transport({ transport }: MessageSource): string {
    return transport.name;
  }

  replay(delivery: Delivery<MessageSource>, { message }: MessageSource, recorded: RecordedResponse): unknown {
    message.settle?.({ kind: 'ack' }, delivery.consumer);
    const reply = replyOf(recorded);
    return message.answering ? message.answering.answer(reply, true) : reply;
  }

  async process(delivery: Delivery<MessageSource>, { message, run }: MessageSource): Promise<unknown> {
    const { checkReply, answering } = message;
    const result = await processJson(
      delivery,
      async () => {
        const reply = checkReply ? checkReply(await run()) : await run();
        return answering ? answering.record(reply) : reply;
      },
      (reply) => (reply instanceof ReplyStream ? STREAM_HEADERS : null),
    );
    message.settle?.({ kind: 'ack' }, delivery.consumer);
    return answering ? answering.answer(result, false) : result;
  }

  /** Settles the failed message with its broker, and answers what its adapter says (GraphQL: with the handler's `retryAfter`). */
  fail(error: unknown, delivery: Delivery<MessageSource>, { message }: MessageSource): unknown {
    answerRetryAfter(error, delivery.handler.retryAfterSeconds);
    const answer = message.settle?.(verdictFor(error, delivery), delivery.consumer);
    if (answer && 'reply' in answer) {
      return answer.reply;
    }
    if (answer && 'reported' in answer) {
      markReported(error);
      throw error;
    }
    throw answer?.error ?? error;
  }

  /** The plan of `handler`, compiled once, with the in-flight default of `transport` (the one that delivers to it, where known). */
  private planOf(handler: ResolvedHandler, transport?: MessageTransport): MessagePlan {
    let plan = this.byHandler.get(handler);
    if (!plan) {
      const lookups = keyLookups(handler);
      const core = this.core.plan<MessageSource>(handler, {
        key: lookups ? keyReader(lookups) : messageIdReader,
        request: ({ message }) => message.request,
        defaultInFlight: transport?.defaultInFlight ?? 'wait',
      });
      plan = { ...core, keyless: handler.required ? undefined : keyAbsence(lookups ?? [MESSAGE_ID]) };
      this.byHandler.set(handler, plan);
    }
    return plan;
  }
}

/** The reply of the values a handler's Observable emitted: the value, when it emitted one; else their stream. */
function replyOfValues(values: unknown[]): unknown {
  return values.length === 1 ? values[0] : new ReplyStream(values);
}

/** What Nest sends for a reply: each value of a reply stream, in order; else the reply. */
function emitted(reply: unknown): Observable<unknown> {
  return reply instanceof ReplyStream ? from(reply.values) : of(reply);
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
function verdictFor(error: unknown, { handler, request }: Delivery<MessageSource>): Verdict {
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

/** Where `handler` looks for its key (`key`: functions, payload fields, message headers); undefined: the broker's own message id. */
function keyLookups(handler: ResolvedHandler): KeyLookup<MessageSource>[] | undefined {
  return handler.key?.map((source): KeyLookup<MessageSource> => {
    if (typeof source === 'function') {
      return { where: 'the key function', find: (context) => source(context) };
    }
    if ('body' in source) {
      const path = source.body;
      return { where: `'${path}' in the message payload`, find: (_context, { message }) => readPath(message.payload, path) };
    }
    const name = source.header;
    return { where: `the ${name} message header`, find: (_context, { message }) => message.header(name) };
  });
}

/** The broker's own id of the message, the default key. */
const MESSAGE_ID: KeyLookup<MessageSource> = { where: 'the message id', find: (_context, { message }) => message.messageId };

/** Reads the default key, the broker's own id of the message, where its transport names one. */
function messageIdReader(_context: ExecutionContext, { transport, message }: MessageSource): string {
  if (transport.messageIdSource === undefined) {
    throw new IdempotencyKeyError(transportMessages.unsupportedTransport(transport.name), 'transport');
  }
  return toMessageKey(message.messageId, transport.messageIdSource);
}
