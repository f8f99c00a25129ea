import { type CallHandler, type ExecutionContext, Inject, Injectable, Logger } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { lastValueFrom } from 'rxjs';
import type { ClaimRequest, CommitOptions, RecordedResponse } from '../../claiming/claim.js';
import { translateDatabaseError } from '../../claiming/claim-errors.js';
import { ClaimingService } from '../../claiming/claiming.service.js';
import { type LeaseClaimRequest, LeaseClaimingService } from '../../leasing/lease-claiming.service.js';
import type { OpenDelivery } from '../../claiming/claim.js';
import { IdempotencyMetadataAccessor, type ResolvedHandler } from '../../decorators/idempotency-metadata.accessor.js';
import { IdempotencyClaimTransactionError } from '../../errors/idempotency-claim-transaction.error.js';
import { IdempotencyError } from '../../errors/idempotency.error.js';
import { IdempotencyResponseTooLargeError } from '../../errors/idempotency-response-too-large.error.js';
import { IdempotencySchemaError } from '../../errors/idempotency-schema.error.js';
import { IdempotencyTransientError } from '../../errors/idempotency-transient.error.js';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from '../../idempotency.constants.js';
import { keyMessages } from '../../keys/key.messages.js';
import { httpMessages } from './http.messages.js';
import { RESOLVED_OPTIONS, type ResolvedIdempotencyOptions } from '../../idempotency.options.js';
import { readPath, toMessageKey } from '../../keys/message-key.js';
import { classify, failureOutcome, statusOutcome } from '../../errors/delivery-error-classes.js';
import { IdempotencyMetricsService } from '../../metrics/idempotency-metrics.service.js';
import { ResponseRecording } from '../../recording/response-recording.js';
import { claimByMode, claimRequestFor } from '../claim-request.js';
import { headerText } from './header-text.js';
import { problemAnswer } from './problem-details.js';
import { type CapturedResponse, findHeaderName, headersAsSent, type HeaderValues, mergeHeaders, ResponseCapture } from './response-capture.js';
import { IdempotencyKeyError } from '../../errors/idempotency-key.error.js';
import { IdempotencyTracing } from '../../tracing/idempotency-tracing.js';
import { IdempotencyExplorer } from '../../discovery/idempotency.explorer.js';

/**
 * How the handler ended, for its answer to settle: `{}` it returned; `{ error }` it threw under
 * `recordErrors`, and its answer decides; undefined it threw, and its claim was rolled back.
 */
type HandlerEnding = { readonly error?: unknown } | undefined;

/** A commit of an error answer under `recordErrors`: the handler's writes are rolled back to the savepoint taken after the claim. */
const UNDO_WORK: CommitOptions = { undoWork: true };

/** The header of a replayed message reply. */
const JSON_BODY = { 'Content-Type': 'application/json; charset=utf-8' };

interface HttpRequestLike {
  method: string;
  url: string;
  /** Express: the URL as received, before any router rewrote `url`. */
  originalUrl?: string;
  headers: Record<string, string | string[] | undefined>;
  /** Node's header lines as received (Express's request is Node's). */
  rawHeaders?: string[];
  /** Fastify: Node's request. */
  raw?: { rawHeaders: string[] };
  body?: unknown;
  /** Set by an authentication guard (Passport's convention). */
  user?: unknown;
}

/** Express's response, or Fastify's reply (whose `raw` is Node's response). */
interface HttpResponseLike {
  raw?: ServerResponse;
  getHeaders(): Record<string, unknown>;
}

/**
 * Runs an idempotent controller method: claim, handle, and commit when the response is about to
 * leave, recording the status, headers and body the client is sent; or replay a recorded
 * response to a duplicate. A successful answer (2xx, 3xx but 304) commits with the work; an error
 * answer whose status the handler's `recordErrors` lists commits without it; any other rolls the
 * claim back with the work, so the request can be retried with the same key.
 */
@Injectable()
export class HttpDelivery {
  private readonly logger = new Logger('Idempotency');
  /** Notes at debug level a key claimed in the anonymous callers' namespace. */
  private readonly noteAnonymousCaller = (handler: ResolvedHandler, key: string): void =>
    this.logger.debug(httpMessages.anonymousCaller(handler.name, handler.consumer, key));
  /** Handlers already warned about a client key shared by authenticated callers. */
  private readonly warnedUnscoped = new WeakSet<ResolvedHandler>();

  constructor(
    private readonly claims: ClaimingService,
    private readonly leases: LeaseClaimingService,
    private readonly recording: ResponseRecording,
    private readonly accessor: IdempotencyMetadataAccessor,
    private readonly metrics: IdempotencyMetricsService,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly tracing: IdempotencyTracing,
    private readonly explorer: IdempotencyExplorer,
  ) {}

  async handle(context: ExecutionContext, next: CallHandler): Promise<unknown> {
    const handler = this.accessor.resolve(context);
    const http = context.switchToHttp();
    const request = http.getRequest<HttpRequestLike>();
    const response = http.getResponse<HttpResponseLike>();
    const raw = response.raw ?? (response as unknown as ServerResponse);
    // Set before the handler's pipeline (by middleware: CORS, say): set anew for every request.
    const before = headersAsSent(raw, response.getHeaders());
    this.warnIfUnscoped(handler, request);
    const trace = this.tracing.start({ consumer: handler.consumer, mode: handler.mode, transport: 'http', method: request.method });
    let claimRequest: LeaseClaimRequest;
    try {
      claimRequest = claimRequestFor(
        handler,
        context,
        {
          key: () => readKey(handler, context, request),
          request: () => ({ method: request.method, url: request.originalUrl ?? request.url, body: request.body }),
          defaultInFlight: 'reject',
          onAnonymousCaller: this.noteAnonymousCaller,
        },
        this.metrics,
      );
    } catch (error) {
      trace.fail(error);
      throw error;
    }
    const outcome = await trace.claim(claimRequest, () => claimByMode(handler, claimRequest, this.claims, this.leases, this.recording)).catch((error: unknown) => {
      // The operator's to fix, like a failed commit: logged, besides the problem answer.
      if (error instanceof IdempotencySchemaError) {
        this.logger.error(error.message);
      }
      throw error;
    });
    if (outcome.kind === 'duplicate') {
      return this.replay(claimRequest, handler, raw, before, outcome.response);
    }
    return this.process(claimRequest, handler, outcome.claim, next, raw, before);
  }

  private async process(
    request: ClaimRequest,
    handler: ResolvedHandler,
    claim: OpenDelivery,
    next: CallHandler,
    raw: ServerResponse,
    before: HeaderValues,
  ): Promise<unknown> {
    const capture = ResponseCapture.attach(raw, this.options.replay.maxBodyBytes);
    let settleHandler!: (ending: HandlerEnding) => void;
    const handled = new Promise<HandlerEnding>((resolve) => (settleHandler = resolve));
    capture.whenEnded((captured) => void this.finish(request, handler, claim, capture, captured, before, handled));
    // A client gone before its answer was written: nobody will see it, so in the transactional
    // mode nothing is kept (the rollback undoes the work). A lease-mode handler's effects are
    // elsewhere and stay: its success is completed all the same, for the redelivery to replay.
    raw.once('close', () => {
      void handled.then(async (ending) => {
        if (ending && claim.rollbackUndoesWork) {
          await claim.rollback('failed');
        }
      });
    });
    try {
      const result = await claim.run(() => lastValueFrom(next.handle(), { defaultValue: undefined }));
      settleHandler({});
      return result;
    } catch (error) {
      const failure = translateDatabaseError(error, request);
      if (handler.recordErrors.size > 0 && !(failure instanceof IdempotencyError)) {
        // The exception filters answer it into the capture; that answer's status says whether it is recorded.
        settleHandler({ error: failure });
        throw failure;
      }
      settleHandler(undefined);
      await claim.rollback(failureOutcome(failure), failure);
      capture.discard();
      throw failure;
    }
  }

  /**
   * Once the response ended and the handler returned (or threw, under `recordErrors`): commit and
   * send, or roll back and send. A success of a handler that returned commits with its work; an
   * error answer whose status the handler's `recordErrors` lists commits without it, rolled back to
   * the savepoint taken after the claim; any other answer rolls the claim back with the work.
   */
  private async finish(
    request: ClaimRequest,
    handler: ResolvedHandler,
    claim: OpenDelivery,
    capture: ResponseCapture,
    captured: CapturedResponse,
    before: HeaderValues,
    handled: Promise<HandlerEnding>,
  ): Promise<void> {
    const ending = await handled;
    if (!ending) {
      return;
    }
    const recordedError = !isSuccess(captured.status) && handler.recordErrors.has(captured.status);
    // A handler that threw never commits its work, even where an interceptor turned its error into a success.
    if (!recordedError && ('error' in ending || !isSuccess(captured.status))) {
      await claim.rollback(statusOutcome(captured.status), ending.error);
      capture.flush();
      return;
    }
    try {
      if (captured.overflowed) {
        const tooLarge = new IdempotencyResponseTooLargeError(request.consumer, request.key, this.options.replay.maxBodyBytes);
        await claim.rollback('failed', tooLarge);
        throw tooLarge;
      }
      await claim.commit(this.recorded(captured, before), recordedError ? UNDO_WORK : undefined);
      capture.flush();
    } catch (error) {
      const failure = asAnswerable(error, request);
      this.logger.error(failure.message, failure.cause instanceof Error ? failure.cause.stack : undefined);
      const answer = problemAnswer(failure);
      capture.replace(answer.status, mergeHeaders(before, answer.headers), Buffer.from(JSON.stringify(answer.body)));
    }
  }

  /**
   * Sends the recorded response in place of whatever the rest of the pipeline writes for this
   * duplicate, header names in their recorded casing, with the Content-Length of the recorded
   * body; a handler that writes its response itself is not run, so it is sent at once.
   * @returns the recorded body, parsed when it is JSON, for the interceptors around this one.
   */
  private replay(request: ClaimRequest, handler: ResolvedHandler, raw: ServerResponse, before: HeaderValues, recorded: RecordedResponse): unknown {
    if (recorded.status === null && this.explorer.isShared(request.consumer)) {
      // Processed by a message handler of the same consumer: its reply, as this route answers success.
      return this.replay(request, handler, raw, before, { status: handler.successStatus!, headers: recorded.body ? JSON_BODY : {}, body: recorded.body });
    }
    const { status } = recorded;
    if (status === null) {
      // Only a claim whose transaction the handler ended itself commits without its response.
      throw new IdempotencyClaimTransactionError(httpMessages.unrecordedResponse(request.consumer, request.key), request.consumer, request.key);
    }
    const headers = mergeHeaders(before, recorded.headers ?? {}, { [IDEMPOTENT_REPLAYED_HEADER]: 'true' });
    const body = recorded.body ?? Buffer.alloc(0);
    const capture = ResponseCapture.attach(raw, this.options.replay.maxBodyBytes);
    capture.replaceWhenEnded(status, headers, body);
    if (handler.respondsItself) {
      raw.end();
    }
    return parsedBody(recorded);
  }

  /**
   * Warns once per handler when a client's `Idempotency-Key` reaches it from an authenticated
   * caller (`request.user`) and the handler has no `scope`: the callers share one namespace of
   * keys. A route behind a guard was warned about at start-up; this catches the callers the
   * start-up could not see (a user set by middleware, a guard given to `app.useGlobalGuards()`).
   */
  private warnIfUnscoped(handler: ResolvedHandler, request: HttpRequestLike): void {
    if (handler.scope !== undefined || !handler.clientKey || !request.user || this.warnedUnscoped.has(handler)) {
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
   * recorded (by name as sent), the body.
   */
  private recorded(captured: CapturedResponse, before: HeaderValues): RecordedResponse {
    const headers: HeaderValues = {};
    for (const [name, value] of Object.entries(captured.headers)) {
      const earlier = findHeaderName(before, name);
      if (!this.options.replay.excludedHeaders.has(name.toLowerCase()) && (earlier === undefined || String(before[earlier]) !== String(value))) {
        headers[name] = value;
      }
    }
    return { status: captured.status, headers, body: captured.body };
  }
}

function readKey(handler: ResolvedHandler, context: ExecutionContext, request: HttpRequestLike): string {
  const source = handler.key ?? { header: IDEMPOTENCY_KEY_HEADER };
  if (typeof source === 'function') {
    return toMessageKey(source(context), 'the key function');
  }
  if ('header' in source) {
    const name = source.header.toLowerCase();
    const value = request.headers[name];
    const where = `the ${source.header} header`;
    // Node joins a header sent twice into one value with ', ': count its lines only then.
    if (typeof value === 'string' && value.includes(',')) {
      const lines = headerLines(request.rawHeaders ?? request.raw?.rawHeaders ?? [], name);
      if (lines > 1) {
        throw new IdempotencyKeyError(keyMessages.textRepeated('idempotency key', where, lines), where);
      }
    }
    return toMessageKey(headerText(value, where), where);
  }
  return toMessageKey(readPath(request.body, source.body), `'${source.body}' in the request body`);
}

/** A status that commits: 2xx, and 3xx but 304 (an answer to a conditional request, not the operation's). */
function isSuccess(status: number): boolean {
  return status >= 200 && status < 400 && status !== 304;
}

/** How many lines of `rawHeaders` carry the header `name` (lower-case). */
function headerLines(rawHeaders: string[], name: string): number {
  let lines = 0;
  for (let index = 0; index < rawHeaders.length; index += 2) {
    if (rawHeaders[index].length === name.length && rawHeaders[index].toLowerCase() === name) {
      lines++;
    }
  }
  return lines;
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
