import { type CallHandler, type ExecutionContext, Logger } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import type { DeliveryCore } from '../../delivery/delivery-core.js';
import type { HandlerPlan } from '../../delivery/handler-plan.js';
import type { ResolvedHandler } from '../../delivery/resolved-handler.js';
import { IDEMPOTENCY_KEY_HEADER } from '../../idempotency.constants.js';
import type { ScopeSource } from '../../options/idempotent-handler.options.js';
import { keyAbsence, type KeyLookup, keyReader, readPath } from '../../keys/message-key.js';
import { type HeaderSource, requestKeyHeader } from './header-text.js';
import { httpMessages } from './http.messages.js';
import type { ResolvedReplayOptions } from './http.options.js';
import type { HeaderValues } from './response-capture.js';

/** @internal */
export interface HttpRequestLike extends HeaderSource {
  method: string;
  url: string;
  /** Express: the URL as received, before any router rewrote `url`. */
  originalUrl?: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
  /** Set by an authentication guard (Passport's convention). */
  user?: unknown;
}

/**
 * One HTTP request to an idempotent route, as the core hands it back to the HTTP entry.
 * @internal
 */
export interface HttpExchange {
  readonly request: HttpRequestLike;
  /** Node's response. */
  readonly raw: ServerResponse;
  /** The headers set before the handler's pipeline (by middleware: CORS, say), as sent. */
  readonly before: HeaderValues;
  readonly next: CallHandler;
}

/**
 * An HTTP handler's plan: the core's, and what its entry reads besides: whether its client's key
 * is shared by the callers (no `scope`), whether a request carries no key (a handler whose key is
 * optional), whether a record may be another transport's (a consumer several handlers name), and
 * what of a response is recorded.
 * @internal
 */
export interface HttpPlan extends HandlerPlan<HttpExchange> {
  readonly unscopedClientKey: boolean;
  readonly keyless: ((context: ExecutionContext, exchange: HttpExchange) => boolean) | undefined;
  readonly shared: boolean;
  readonly replay: ResolvedReplayOptions;
}

/** What the plan of an HTTP route is compiled with: the module's scope of HTTP keys and its replay options. */
export interface HttpPlanning {
  readonly scope: Exclude<ScopeSource, false> | undefined;
  readonly replay: ResolvedReplayOptions;
}

const logger = new Logger('Idempotency');

/**
 * The plan of `handler`, an HTTP route.
 * @internal
 */
export function compileHttpPlan(core: DeliveryCore, handler: ResolvedHandler, shared: boolean, { scope, replay }: HttpPlanning): HttpPlan {
  const lookups = keyLookups(handler);
  const plan = core.plan<HttpExchange>(handler, {
    key: keyReader(lookups),
    request: ({ request }) => ({ method: request.method, url: request.originalUrl ?? request.url, body: request.body }),
    defaultInFlight: 'reject',
    // A key the module's scope does not scope (one not from the client's Idempotency-Key header) is bound to its caller by the fingerprint.
    caller: handler.scope === undefined ? scope : undefined,
    // Noted at debug level: a key claimed in the anonymous callers' namespace.
    onAnonymousCaller: (key) => logger.debug(httpMessages.anonymousCaller(handler.name, handler.consumer, key)),
  });
  return Object.assign(plan, {
    unscopedClientKey: handler.scope === undefined && handler.clientKey,
    keyless: handler.required ? undefined : keyAbsence(lookups),
    shared,
    replay,
  });
}

/** Where `handler` looks for its key: its key functions, request headers (the client's `Idempotency-Key` by default), fields of the body. */
function keyLookups(handler: ResolvedHandler): KeyLookup<HttpExchange>[] {
  return (handler.key ?? [{ header: IDEMPOTENCY_KEY_HEADER }]).map((source): KeyLookup<HttpExchange> => {
    if (typeof source === 'function') {
      return { where: 'the key function', find: (context) => source(context) };
    }
    if ('header' in source) {
      const name = source.header.toLowerCase();
      const where = `the ${source.header} header`;
      return { where, find: (_context, { request }) => requestKeyHeader(request, name, where) };
    }
    const path = source.body;
    return { where: `'${path}' in the request body`, find: (_context, { request }) => readPath(request.body, path) };
  });
}
