import { type CallHandler, type ExecutionContext, HttpStatus, Injectable, Logger } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { lastValueFrom } from 'rxjs';
import type { ClaimRequest, CommitOptions, RecordedResponse } from '../../claiming/claim.js';
import { translateDatabaseError } from '../../claiming/claim-errors.js';
import { type Delivery, DeliveryCore, type DeliveryEntry } from '../../delivery/delivery-core.js';
import type { ResolvedHandler } from '../../delivery/resolved-handler.js';
import { IdempotencyExplorer } from '../../discovery/idempotency.explorer.js';
import { classify, failureOutcome, statusOutcome } from '../../errors/delivery-error-classes.js';
import { IdempotencyClaimTransactionError, IdempotencyError, IdempotencyResponseTooLargeError, IdempotencyTransientError } from '../../errors/idempotency.errors.js';
import { IDEMPOTENT_REPLAYED_HEADER } from '../../idempotency.constants.js';
import { HandlerPlans } from '../handler-plans.js';
import type { HttpExchange, HttpPlan, HttpRequestLike } from './http-plan.js';
import { httpMessages } from './http.messages.js';
import { problemAnswer } from './problem-details.js';
import { answerRetryAfter } from './retry-after.js';
import { type CapturedResponse, findHeaderName, headersAsSent, type HeaderValues, mergeHeaders, ResponseCapture } from './response-capture.js';

/**
 * How the handler ended, for its answer to settle: `{}` it returned; `{ error }` it threw under
 * `recordErrors`, and its answer decides; undefined it threw, and its claim was rolled back.
 */
type HandlerEnding = { readonly error?: unknown } | undefined;

/** A commit of an error answer under `recordErrors`: the handler's writes are rolled back to the savepoint taken after the claim. */
const UNDO_WORK: CommitOptions = { undoWork: true };

/** The header of a replayed message reply. */
const JSON_BODY = { 'Content-Type': 'application/json; charset=utf-8' };

/** Express's response, or Fastify's reply (whose `raw` is Node's response). */
interface HttpResponseLike {
  raw?: ServerResponse;
  getHeaders(): Record<string, unknown>;
}

/** Subscribes to the route handler's answer once, as Nest's own pipeline does. */
const LAST_VALUE = { defaultValue: undefined };

/**
 * The HTTP entry of the delivery core: runs an idempotent controller method, claim, handle, and
 * commit when the response is about to leave, recording the status, headers and body the client
 * is sent; or replays a recorded response to a duplicate. A successful answer (2xx, 3xx but 304)
 * commits with the work; an error answer whose status the handler's `recordErrors` lists commits
 * without it; any other rolls the claim back with the work, so the request can be retried with
 * the same key.
 */
@Injectable()
export class HttpDelivery implements DeliveryEntry<HttpExchange, HttpPlan> {
  private readonly logger = new Logger('Idempotency');
  /** Handlers already warned about a client key shared by authenticated callers. */
  private readonly warnedUnscoped = new WeakSet<ResolvedHandler>();
  /** Handlers already warned about a response too large to record. */
  private readonly warnedTooLarge = new WeakSet<ResolvedHandler>();

  constructor(
    private readonly core: DeliveryCore,
    private readonly plans: HandlerPlans,
    private readonly explorer: IdempotencyExplorer,
  ) {}

  handle(context: ExecutionContext, next: CallHandler): Promise<unknown> {
    const plan = this.plans.http(context);
    const request = context.getArgByIndex<HttpRequestLike>(0);
    const response = context.getArgByIndex<HttpResponseLike>(1);
    const raw = response.raw ?? (response as unknown as ServerResponse);
    if (plan.unscopedClientKey && request.user) {
      this.warnUnscoped(plan.handler);
    }
    // Set before the handler's pipeline: set anew for every request.
    // Fastify's reply holds headers of its own until it sends; Express's response is Node's.
    const exchange: HttpExchange = { request, raw, before: headersAsSent(raw, response.raw ? response.getHeaders() : undefined), next };
    if (plan.keyless?.(context, exchange)) {
      return lastValueFrom(next.handle(), LAST_VALUE);
    }
    return this.core.deliver(plan, context, exchange, this);
  }

  transport(): string {
    return 'http';
  }

  method({ request }: HttpExchange): string {
    return request.method;
  }

  async process(delivery: Delivery<HttpExchange, HttpPlan>, { raw, before, next }: HttpExchange): Promise<unknown> {
    const capture = ResponseCapture.attach(raw);
    let settleHandler!: (ending: HandlerEnding) => void;
    const handled = new Promise<HandlerEnding>((resolve) => (settleHandler = resolve));
    capture.whenEnded((captured) => void this.finish(delivery, capture, captured, before, handled));
    // A client gone before its answer was written: nobody will see it, so in the transactional
    // mode nothing is kept (the rollback undoes the work). A lease-mode handler's effects are
    // elsewhere and stay: its success is completed all the same, for the redelivery to replay.
    raw.once('close', () => {
      // Settled already (the usual case: the answer was sent after the commit): nothing to undo.
      if (delivery.ended) {
        return;
      }
      void handled.then(async (ending) => {
        if (ending && delivery.rollbackUndoesWork) {
          await delivery.rollback('failed');
        }
      });
    });
    try {
      const result = await delivery.run(() => lastValueFrom(next.handle(), LAST_VALUE));
      settleHandler({});
      return result;
    } catch (error) {
      const failure = translateDatabaseError(error, delivery.request!);
      if (delivery.handler.recordErrors.size > 0 && !(failure instanceof IdempotencyError)) {
        // The exception filters answer it into the capture; that answer's status says whether it is recorded.
        settleHandler({ error: failure });
        throw failure;
      }
      settleHandler(undefined);
      await delivery.rollback(failureOutcome(failure), failure);
      capture.discard();
      throw failure;
    }
  }

  /**
   * Answers the failure as the module's exception filter will, with the handler's `Retry-After`;
   * one answered 500 is the server's to fix (a store's missing schema, a handler that ended the
   * claim's transaction), logged besides, as Nest logs the 500s it answers itself.
   */
  fail(error: unknown, delivery: Delivery<HttpExchange, HttpPlan>): never {
    answerRetryAfter(error, delivery.handler.retryAfterSeconds);
    if (classify(error)?.status === HttpStatus.INTERNAL_SERVER_ERROR) {
      this.logger.error((error as Error).message);
    }
    throw error;
  }

  /**
   * Sends the recorded response in place of whatever the rest of the pipeline writes for this
   * duplicate, header names in their recorded casing, with the Content-Length of the recorded
   * body; a handler that writes its response itself is not run, so it is sent at once.
   * @returns the recorded body, parsed when it is JSON, for the interceptors around this one.
   */
  replay(delivery: Delivery<HttpExchange, HttpPlan>, exchange: HttpExchange, recorded: RecordedResponse): unknown {
    const { handler } = delivery;
    const request = delivery.request!;
    if (recorded.status === null && delivery.plan.shared) {
      // Processed by a message handler of the same consumer: its reply, as this route answers success.
      return this.replay(delivery, exchange, { status: handler.successStatus!, headers: recorded.body ? JSON_BODY : {}, body: recorded.body });
    }
    const { status } = recorded;
    if (status === null) {
      // Only a claim whose transaction the handler ended itself commits without its response.
      throw new IdempotencyClaimTransactionError(httpMessages.unrecordedResponse(request.consumer, request.key), request.consumer, request.key);
    }
    const headers = mergeHeaders(exchange.before, recorded.headers ?? {}, { [IDEMPOTENT_REPLAYED_HEADER]: 'true' });
    const body = recorded.body ?? Buffer.alloc(0);
    const capture = ResponseCapture.attach(exchange.raw);
    capture.replaceWhenEnded(status, headers, body);
    if (handler.respondsItself) {
      exchange.raw.end();
    }
    return parsedBody(recorded);
  }

  /**
   * Once the response ended and the handler returned (or threw, under `recordErrors`): commit and
   * send, or roll back and send. A success of a handler that returned commits with its work; an
   * error answer whose status the handler's `recordErrors` lists commits without it, rolled back to
   * the savepoint taken after the claim; any other answer rolls the claim back with the work.
   */
  private async finish(
    delivery: Delivery<HttpExchange, HttpPlan>,
    capture: ResponseCapture,
    captured: CapturedResponse,
    before: HeaderValues,
    handled: Promise<HandlerEnding>,
  ): Promise<void> {
    const ending = await handled;
    if (!ending) {
      return;
    }
    const request = delivery.request!;
    const recordedError = !isSuccess(captured.status) && delivery.handler.recordErrors.has(captured.status);
    // A handler that threw never commits its work, even where an interceptor turned its error into a success.
    if (!recordedError && ('error' in ending || !isSuccess(captured.status))) {
      await delivery.rollback(statusOutcome(captured.status), ending.error);
      capture.flush();
      return;
    }
    try {
      await delivery.commit(this.recorded(delivery, captured, before), recordedError ? UNDO_WORK : undefined);
      capture.flush();
    } catch (error) {
      const failure = asAnswerable(error, request);
      answerRetryAfter(failure, delivery.handler.retryAfterSeconds);
      this.logger.error(failure.message, failure.cause instanceof Error ? failure.cause.stack : undefined);
      const answer = problemAnswer(failure);
      capture.replace(answer.status, mergeHeaders(before, answer.headers), Buffer.from(JSON.stringify(answer.body)));
    }
  }

  /** Warns once per handler, at its first response too large to record, with the fix. */
  private warnTooLarge(handler: ResolvedHandler, bytes: number, maxBodyBytes: number): void {
    if (!this.warnedTooLarge.has(handler)) {
      this.warnedTooLarge.add(handler);
      this.logger.warn(httpMessages.responseTooLarge(handler.name, handler.consumer, bytes, maxBodyBytes));
    }
  }

  /**
   * Warns once per handler when a client's `Idempotency-Key` reaches it from an authenticated
   * caller (`request.user`) and the handler has no `scope`: the callers share one namespace of
   * keys. A route behind a guard was warned about at start-up; this catches the callers the
   * start-up could not see (a user set by middleware, a guard given to `app.useGlobalGuards()`).
   */
  private warnUnscoped(handler: ResolvedHandler): void {
    if (this.warnedUnscoped.has(handler)) {
      return;
    }
    this.warnedUnscoped.add(handler);
    if (this.explorer.isWarnedUnscoped(handler)) {
      return;
    }
    this.logger.warn(httpMessages.unscopedClientKey(handler.name, handler.consumer));
  }

  /**
   * What is recorded: the status, the headers set since the pipeline started but those never
   * recorded (by name as sent), the body. A body larger than `replay.maxBodyBytes` that the
   * handler's `record` policy would keep is not: the `response-too-large` problem answer is
   * recorded in its place, for its duplicates, and the handler's first such response is warned about.
   */
  private recorded(delivery: Delivery<HttpExchange, HttpPlan>, captured: CapturedResponse, before: HeaderValues): RecordedResponse {
    const { maxBodyBytes, excludedHeaders: excluded } = delivery.plan.replay;
    if (captured.body.length > maxBodyBytes && delivery.handler.record === 'response') {
      const { consumer, key } = delivery.request!;
      const tooLarge = new IdempotencyResponseTooLargeError(consumer, key, maxBodyBytes, captured.status, captured.body.length);
      this.warnTooLarge(delivery.handler, captured.body.length, maxBodyBytes);
      const answer = problemAnswer(tooLarge);
      return { status: answer.status, headers: answer.headers, body: Buffer.from(JSON.stringify(answer.body)) };
    }
    const headers: HeaderValues = {};
    for (const name in captured.headers) {
      const value = captured.headers[name];
      const earlier = findHeaderName(before, name);
      if (!excluded.has(name.toLowerCase()) && (earlier === undefined || String(before[earlier]) !== String(value))) {
        headers[name] = value;
      }
    }
    return { status: captured.status, headers, body: captured.body };
  }
}

/** A status that commits: 2xx, and 3xx but 304 (an answer to a conditional request, not the operation's). */
function isSuccess(status: number): boolean {
  return status >= 200 && status < 400 && status !== 304;
}

function parsedBody(recorded: RecordedResponse): unknown {
  const typeName = recorded.headers ? findHeaderName(recorded.headers, 'content-type') : undefined;
  const type = String(typeName === undefined ? '' : recorded.headers![typeName]);
  if (!recorded.body || recorded.body.length === 0) {
    return undefined;
  }
  if (/[/+]json\b/i.test(type)) {
    try {
      return JSON.parse(recorded.body.toString('utf8'));
    } catch {
      return recorded.body;
    }
  }
  return /^text\//i.test(type) ? recorded.body.toString('utf8') : recorded.body;
}

/** A failure at the commit as one of the module's answerable errors; a lost connection is one a retry settles. */
function asAnswerable(error: unknown, request: ClaimRequest): IdempotencyError {
  if (error instanceof IdempotencyError && classify(error)) {
    return error;
  }
  return new IdempotencyTransientError(httpMessages.commitUnsettled(request.key, (error as Error)?.message ?? String(error)), request.consumer, request.key, {
    cause: error,
  });
}
