import { Inject, Injectable, type Type } from '@nestjs/common';
import { RequestMethod } from '@nestjs/common';
import { GUARDS_METADATA, HTTP_CODE_METADATA, METHOD_METADATA, PATH_METADATA, RESPONSE_PASSTHROUGH_METADATA, ROUTE_ARGS_METADATA, SSE_METADATA } from '@nestjs/common/constants.js';
import { Reflector } from '@nestjs/core';
import { MAX_RETENTION_MS, MAX_TIMER_MS, toMilliseconds } from '../duration/duration.js';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { IDEMPOTENCY_KEY_HEADER } from '../idempotency.constants.js';
import { handlerMessages } from './idempotent-handler.messages.js';
import { keyMessages } from '../keys/key.messages.js';
import { optionValueMessages } from '../options/option-values.messages.js';
import { toFlag } from '../options/option-values.js';
import { toKeySources, toSenderName } from '../keys/message-key.js';
import { patternKey } from './pattern-key.js';
import { PROVIDER_HANDLER_KINDS, type ProviderHandlerKind, providerHandlerOf } from '../transports/message-transport.js';
import {
  DEFAULT_SENDER,
  HANDLER_OPTIONS_METADATA,
  NEXT_PARAMTYPE,
  PATTERN_HANDLER_METADATA,
  PATTERN_METADATA,
  RESPONSE_PARAMTYPE,
  TRANSPORT_METADATA,
} from './idempotency-metadata.constants.js';
import { GRAPHQL_TRANSPORT } from '../transports/graphql/graphql-resolvers.handler-kind.js';
import { RESOLVED_OPTIONS, type ResolvedIdempotencyOptions, toRetryAfterSeconds } from '../idempotency.options.js';
import { toRecordedErrors, toRecordPolicy } from '../recording/recording.options.js';
import { recordingMessages } from '../recording/recording.messages.js';
import type { IdempotentHandlerOptions, KeyEntry, KeySource } from '../options/idempotent-handler.options.js';
import type { IdempotencyMode, IsolationLevel } from '../options/handler-values.js';
import type { ResolvedHandler } from '../delivery/resolved-handler.js';

/** How long a lease is renewed while its handler runs, unless the handler says otherwise. */
const DEFAULT_RENEW_LEASE_FOR = '10m';

const MODES: readonly IdempotencyMode[] = ['transaction', 'lease'];
const NO_STATUSES: ReadonlySet<number> = new Set();
const ISOLATION_LEVELS: readonly IsolationLevel[] = ['READ UNCOMMITTED', 'READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE'];

/**
 * A microservice pattern an idempotent handler is bound to.
 * @internal
 */
export interface HandlerPatterns {
  readonly patterns: readonly unknown[];
  /** True for `@EventPattern`, false for `@MessagePattern`. */
  readonly isEvent: boolean;
  /** The transport it is restricted to (Nest's `Transport` value), if any. */
  readonly transport: unknown;
}

/**
 * The one reader of `@IdempotentHandler()` metadata and of the Nest metadata the module needs.
 * Resolves each handler's options once per concrete class: a method inherited by two controllers
 * resolves to two consumers. The start-up checks and the claims read the same resolutions.
 * @internal
 */
@Injectable()
export class IdempotencyMetadataAccessor {
  private readonly resolved = new WeakMap<Type, Map<string, ResolvedHandler>>();

  constructor(
    private readonly reflector: Reflector,
    @Inject(RESOLVED_OPTIONS) private readonly moduleOptions: ResolvedIdempotencyOptions,
    @Inject(PROVIDER_HANDLER_KINDS) private readonly providerHandlerKinds: readonly ProviderHandlerKind[],
  ) {}

  /** The raw options of a decorated method, or undefined when it is not an idempotent handler. */
  getOptions(handler: object): IdempotentHandlerOptions | undefined {
    return this.reflector.get<IdempotentHandlerOptions | undefined>(HANDLER_OPTIONS_METADATA, handler as never);
  }

  /**
   * The handler `methodName` of the concrete class `target`, resolved once.
   * @throws IdempotencyOptionsError naming the handler when its options cannot work.
   */
  resolveFor(target: Type, methodName: string): ResolvedHandler {
    let byMethod = this.resolved.get(target);
    if (!byMethod) {
      byMethod = new Map();
      this.resolved.set(target, byMethod);
    }
    let handler = byMethod.get(methodName);
    if (!handler) {
      handler = this.resolveNew(target, methodName);
      byMethod.set(methodName, handler);
    }
    return handler;
  }

  /** The names of the guards of a handler's method and of its class (`@UseGuards()`), the class's first. */
  getGuards(target: Type, methodName: string): string[] {
    const method = target.prototype[methodName] as object;
    const guards = [target, method].flatMap((host) => (this.reflector.get<unknown[] | undefined>(GUARDS_METADATA, host as never) ?? []) as unknown[]);
    return guards.map((guard) => (typeof guard === 'function' ? guard.name : (guard as object).constructor.name));
  }

  /** True for an `@Sse()` handler, whose stream cannot be recorded. */
  isServerSentEvents(handler: object): boolean {
    return this.reflector.get(SSE_METADATA, handler as never) !== undefined;
  }

  /** The microservice patterns of a handler; undefined for an HTTP route. */
  getPatterns(handler: object): HandlerPatterns | undefined {
    const patterns = this.reflector.get<unknown[] | undefined>(PATTERN_METADATA, handler as never);
    if (!patterns) {
      return undefined;
    }
    return {
      patterns,
      isEvent: this.reflector.get(PATTERN_HANDLER_METADATA, handler as never) === 2,
      transport: this.reflector.get(TRANSPORT_METADATA, handler as never),
    };
  }

  /**
   * The handler of `IdempotentRunner.run()` calls under `options.consumer`: their options resolved
   * as a decorated message handler's (the key is given with each call, nothing is fingerprinted).
   * @throws IdempotencyOptionsError naming the consumer when an option cannot work.
   */
  resolveRun(options: IdempotentHandlerOptions & { readonly consumer: string }): ResolvedHandler {
    if (typeof options.consumer !== 'string' || options.consumer.length === 0 || options.consumer.length > 255) {
      throw new IdempotencyOptionsError(handlerMessages.invalidRunConsumer(options.consumer));
    }
    return this.resolveOptions(`run(${options.consumer})`, options.consumer, { ...options, fingerprint: false }, { requestMethod: undefined, entry: undefined, sendersKey: true, respondsItself: false, request: false });
  }

  private resolveNew(target: Type, methodName: string): ResolvedHandler {
    const name = `${target.name}.${methodName}`;
    const method = target.prototype[methodName] as object;
    const options = this.getOptions(method) ?? {};
    const patterns = this.getPatterns(method);
    const requestMethod = patterns ? undefined : routeMethod(method);
    const provider = patterns || requestMethod ? undefined : providerHandlerOf(this.providerHandlerKinds, target, methodName);
    const contract = patterns ? patterns.patterns.map(patternKey).join(' | ') : requestMethod ? `${requestMethod} ${routePath(target, method)}` : provider?.contract;
    const entry: KeyEntry | undefined = patterns ? 'rpc' : requestMethod ? 'http' : provider?.kind.transport === GRAPHQL_TRANSPORT ? 'graphql' : undefined;
    const handler = this.resolveOptions(name, options.consumer ?? contract ?? name, options, {
      requestMethod,
      entry,
      sendersKey: entry === 'rpc',
      respondsItself: respondsItself(target, methodName),
      request: !patterns,
    });
    return requestMethod === undefined
      ? handler
      : { ...handler, successStatus: (Reflect.getMetadata(HTTP_CODE_METADATA, method) as number | undefined) ?? (requestMethod === 'POST' ? 201 : 200) };
  }

  /** A handler's options with the module's defaults applied and checked; `name` says whose in errors. */
  private resolveOptions(
    name: string,
    consumer: string,
    options: IdempotentHandlerOptions,
    shape: { requestMethod: string | undefined; entry: KeyEntry | undefined; sendersKey: boolean; respondsItself: boolean; request: boolean },
  ): ResolvedHandler {
    const { requestMethod, entry } = shape;
    const mode = oneOf(`mode of ${name}`, options.mode, MODES) ?? 'transaction';
    const key = options.key === undefined ? entry && this.moduleOptions.key[entry] : toKeySources(`key of ${name}`, options.key);
    const clientKey = !shape.sendersKey && isClientKey(key);
    const moduleScope = entry === 'rpc' || (entry && clientKey) ? this.moduleOptions.scope[entry] : undefined;
    return {
      name,
      consumer,
      legacyConsumer: options.consumer === undefined && consumer !== name ? name : undefined,
      namesConsumer: options.consumer !== undefined,
      successStatus: undefined,
      requestMethod,
      key,
      required: toRequired(name, options.required, entry),
      scope: toScope(name, options.scope, moduleScope),
      clientKey,
      sender: toSender(name, options.sender ?? DEFAULT_SENDER),
      retentionMs: options.retention
        ? toMilliseconds(`retention of ${name}`, options.retention, MAX_RETENTION_MS)
        : this.moduleOptions.retentionMs,
      inFlight: oneOf(`inFlight of ${name}`, options.inFlight, ['reject', 'wait']),
      fingerprint: toFingerprint(name, options.fingerprint, shape.request),
      isolationLevel: oneOf(`isolationLevel of ${name}`, options.isolationLevel, ISOLATION_LEVELS),
      maxAttempts: toAttemptLimit(`maxAttempts of ${name}`, options.maxAttempts ?? 5),
      retryDelayMs: toMilliseconds(`retryDelay of ${name}`, options.retryDelay ?? '1s', MAX_TIMER_MS),
      retryAfterSeconds:
        options.retryAfter === undefined ? this.moduleOptions.retryAfterSeconds : toRetryAfterSeconds(`retryAfter of ${name}`, options.retryAfter),
      respondsItself: shape.respondsItself,
      mode,
      leaseMs: toMilliseconds(`lease of ${name}`, options.lease ?? '30s', MAX_TIMER_MS),
      renewLeaseForMs: options.renewLeaseFor === false ? 0 : toMilliseconds(`renewLeaseFor of ${name}`, options.renewLeaseFor ?? DEFAULT_RENEW_LEASE_FOR, MAX_TIMER_MS),
      store: options.store ?? this.moduleOptions.store,
      record: options.record === undefined ? this.moduleOptions.record : toRecordPolicy(`record of ${name}`, options.record),
      recordErrors: this.recordErrorsOf(name, options.recordErrors, mode, requestMethod !== undefined),
    };
  }

  /**
   * The error statuses a handler records: its own (refused on a lease-mode or message handler),
   * else the module's for an HTTP handler in the transactional mode, else none.
   */
  private recordErrorsOf(name: string, value: unknown, mode: IdempotencyMode, http: boolean): ReadonlySet<number> {
    if (value === undefined) {
      return http && mode === 'transaction' ? this.moduleOptions.recordErrors : NO_STATUSES;
    }
    const statuses = toRecordedErrors(`recordErrors of ${name}`, value, true);
    if (!http) {
      throw new IdempotencyOptionsError(recordingMessages.recordErrorsNotHttp(name));
    }
    if (mode === 'lease') {
      throw new IdempotencyOptionsError(recordingMessages.recordErrorsInLeaseMode(name));
    }
    return statuses;
  }
}

/** Whether Nest leaves the response to the handler: `@Res()` or `@Next()` without `passthrough`. */
function respondsItself(target: Type, methodName: string): boolean {
  const parameters = (Reflect.getMetadata(ROUTE_ARGS_METADATA, target, methodName) ?? {}) as Record<string, unknown>;
  const takesResponse = Object.keys(parameters).some((key) => {
    const paramtype = Number(key.split(':')[0]);
    return paramtype === RESPONSE_PARAMTYPE || paramtype === NEXT_PARAMTYPE;
  });
  return takesResponse && Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, target, methodName) !== true;
}

function oneOf<T extends string>(name: string, value: unknown, allowed: readonly T[]): T | undefined {
  if (value !== undefined && !allowed.includes(value as T)) {
    throw new IdempotencyOptionsError(optionValueMessages.invalidChoice(name, value, allowed));
  }
  return value as T | undefined;
}

function toSender(name: string, value: unknown): ResolvedHandler['sender'] {
  if (typeof value === 'function') {
    return value as ResolvedHandler['sender'];
  }
  try {
    return toSenderName(value, `the sender of ${name}`);
  } catch (error) {
    throw new IdempotencyOptionsError((error as Error).message);
  }
}

/** The route's HTTP method, as Nest's `RequestMethod` names it. */
function routeMethod(method: object): string | undefined {
  const value = Reflect.getMetadata(METHOD_METADATA, method) as RequestMethod | undefined;
  return value === undefined ? undefined : RequestMethod[value];
}

/** The route's path as the controller and the method declare it (no global prefix, no version): `/webhooks/payments`. */
function routePath(target: Type, method: object): string {
  const segments = [Reflect.getMetadata(PATH_METADATA, target), Reflect.getMetadata(PATH_METADATA, method)].map((path: unknown) =>
    ([] as unknown[])
      .concat(path ?? [])
      .map((part) => String(part).replace(/^\/+|\/+$/g, ''))
      .join(','),
  );
  return `/${segments.filter(Boolean).join('/')}`;
}

/** Whether the key is one the client chose, in the `Idempotency-Key` header (the HTTP default), when it is sent there. */
function isClientKey(key: readonly KeySource[] | undefined): boolean {
  return key === undefined || key.some((source) => typeof source === 'object' && 'header' in source && source.header.toLowerCase() === IDEMPOTENCY_KEY_HEADER.toLowerCase());
}

/** `required`, which only a handler whose callers may send no key (an HTTP route, a GraphQL mutation) may turn off. */
function toRequired(name: string, value: unknown, entry: KeyEntry | undefined): boolean {
  if (value === undefined) {
    return true;
  }
  const required = toFlag(`required of ${name}`, value);
  if (!required && entry !== 'http' && entry !== 'graphql') {
    throw new IdempotencyOptionsError(handlerMessages.optionalKeyNotHttp(name));
  }
  return required;
}

function toScope(name: string, value: unknown, moduleDefault: ResolvedHandler['scope']): ResolvedHandler['scope'] {
  if (value !== undefined && value !== false && typeof value !== 'function') {
    throw new IdempotencyOptionsError(keyMessages.invalidScope(`scope of ${name}`, value));
  }
  return value === undefined ? moduleDefault : (value as ResolvedHandler['scope']);
}

/** A handler's fingerprint: its option, else its request for a handler that has one (an HTTP route, a GraphQL mutation), whatever its key source. */
function toFingerprint(name: string, value: unknown, request: boolean): ResolvedHandler['fingerprint'] {
  if (value !== undefined && value !== false && typeof value !== 'function') {
    throw new IdempotencyOptionsError(handlerMessages.invalidFingerprint(name, value));
  }
  return (value as ResolvedHandler['fingerprint'] | undefined) ?? (request ? 'request' : false);
}

function toAttemptLimit(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new IdempotencyOptionsError(handlerMessages.invalidAttemptLimit(name, value));
  }
  return value;
}
