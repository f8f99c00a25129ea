import { Inject, Injectable, Logger, type OnModuleInit, type Type } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';
import { type HandlerPatterns, IdempotencyMetadataAccessor } from '../decorators/idempotency-metadata.accessor.js';
import type { ResolvedHandler } from '../delivery/resolved-handler.js';
import { formatDuration } from '../duration/duration.js';
import { IdempotencyConsumerConflictError, IdempotencyOptionsError, IdempotencyRetentionError, IdempotencyUnsupportedHandlerError } from '../errors/idempotency.errors.js';
import { DEFAULT_SENDER } from '../decorators/idempotency-metadata.constants.js';
import { discoveryMessages } from './discovery.messages.js';
import { LeaseStores, POSTGRES_STORE } from '../leasing/lease-stores.js';
import { PROVIDER_HANDLER_KINDS, type ProviderHandlerKind, providerHandlerOf } from '../transports/message-transport.js';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { globalGuardNames } from './nest-global-guards.js';
import { patternKey } from '../decorators/pattern-key.js';
import { DISCOVERY_OPTIONS, type ResolvedDiscoveryOptions } from './discovery.options.js';

/**
 * An `@IdempotentHandler()` found in a controller, with its options resolved.
 * @internal
 */
export interface DiscoveredHandler {
  /** The module that declares the controller. */
  readonly moduleName: string;
  readonly handler: ResolvedHandler;
  /** Its concrete class, and the name of its method there. */
  readonly target: Type;
  readonly methodName: string;
  /** Its microservice patterns; undefined for an HTTP route. */
  readonly patterns: HandlerPatterns | undefined;
  /** A handler that is a provider's method: its instance's wrapper, method, and transport. */
  readonly provider?: ProviderHandler;
  /** The guards of its method and its controller (`@UseGuards()`). */
  readonly guards: readonly string[];
  /** Other handlers name its consumer too (each of another transport): a record may come from another transport's handler. */
  readonly shared: boolean;
  /**
   * How many idempotent `@EventPattern` handlers a message of `pattern` (as a transport names it)
   * goes to, for a handler of that pattern; 0 when none is known.
   */
  readonly fanOut: (pattern: string) => number;
}

/** An idempotent handler that is a method of a provider, with the transport that delivers to it. */
export interface ProviderHandler {
  readonly wrapper: InstanceWrapper;
  readonly methodName: string;
  readonly kind: ProviderHandlerKind;
}

/**
 * Finds every `@IdempotentHandler()` at start-up, resolving each for its concrete controller as
 * the claims will, and refuses to start when two of them claim one consumer name, when one keeps
 * its ids for less than its sender's redelivery horizon, when its store is unknown (or not
 * PostgreSQL for the transactional mode), or when one cannot be made idempotent
 * (an `@Sse()` stream; a method of a provider that is no controller nor a transport's handler, such
 * as a WebSocket gateway; a request-scoped provider whose framework calls it without interceptors).
 * @internal
 */
@Injectable()
export class IdempotencyExplorer implements OnModuleInit {
  private readonly logger = new Logger('Idempotency');
  private handlers: DiscoveredHandler[] | undefined;
  private readonly warnedUnscoped = new WeakSet<ResolvedHandler>();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: IdempotencyMetadataAccessor,
    @Inject(DISCOVERY_OPTIONS) private readonly options: ResolvedDiscoveryOptions,
    private readonly stores: LeaseStores,
    private readonly modules: ModulesContainer,
    @Inject(PROVIDER_HANDLER_KINDS) private readonly providerHandlerKinds: readonly ProviderHandlerKind[],
  ) {}

  onModuleInit(): void {
    const handlers = (this.handlers = this.findHandlers());
    this.checkConsumersAreUnique(handlers);
    handlers.forEach((found) => {
      this.checkRetention(found.handler);
      this.checkStore(found.handler);
    });
    this.warnOfUndeclaredSenders(handlers);
    this.warnOfUnscopedGuardedRoutes(handlers);
  }

  /**
   * Every idempotent handler of the application; found now when asked before `onModuleInit`
   * (a hybrid application may start its microservices before the module hooks run).
   */
  discovered(): readonly DiscoveredHandler[] {
    this.handlers ??= this.findHandlers();
    return this.handlers;
  }

  private findHandlers(): DiscoveredHandler[] {
    const found: Omit<DiscoveredHandler, 'shared' | 'fanOut'>[] = [];
    const seen = new Set<unknown>();
    const controllers = new Set(this.discovery.getControllers());
    for (const wrapper of [...controllers, ...this.discovery.getProviders()]) {
      if (seen.has(wrapper.metatype)) {
        continue;
      }
      seen.add(wrapper.metatype);
      for (const method of this.decoratedMethods(wrapper)) {
        const target = wrapper.metatype as Type;
        const handler = this.accessor.resolveFor(target, method);
        const methodRef = target.prototype[method] as object;
        const provider = controllers.has(wrapper) ? undefined : providerHandlerOf(this.providerHandlerKinds, target, method);
        if (!controllers.has(wrapper) && !provider) {
          throw new IdempotencyUnsupportedHandlerError(discoveryMessages.notInController(handler.name), handler.name);
        }
        if (provider?.kind.calls && !wrapper.isDependencyTreeStatic()) {
          throw new IdempotencyUnsupportedHandlerError(discoveryMessages.providerRequestScoped(handler.name), handler.name);
        }
        if (this.accessor.isServerSentEvents(methodRef)) {
          throw new IdempotencyUnsupportedHandlerError(discoveryMessages.serverSentEventsUnsupported(handler.name), handler.name);
        }
        if (handler.requestMethod && SAFE_METHODS.has(handler.requestMethod)) {
          throw new IdempotencyUnsupportedHandlerError(discoveryMessages.safeMethodUnsupported(handler.name, handler.requestMethod), handler.name);
        }
        found.push({
          moduleName: wrapper.host?.name ?? 'an unknown module',
          handler,
          target,
          methodName: method,
          patterns: this.accessor.getPatterns(methodRef),
          provider: provider && { wrapper, methodName: method, kind: provider.kind },
          guards: this.accessor.getGuards(target, method),
        });
      }
    }
    return withSharingAndFanOut(found);
  }

  /** The names of the methods of a class wrapper that carry `@IdempotentHandler()`. */
  private decoratedMethods(wrapper: ReturnType<DiscoveryService['getProviders']>[number]): string[] {
    const prototype = (wrapper.metatype as Type | undefined)?.prototype as Record<string, object> | undefined;
    if (!prototype || wrapper.isAlias || typeof wrapper.metatype !== 'function' || wrapper.inject) {
      return [];
    }
    return this.scanner.getAllMethodNames(prototype).filter((method) => this.accessor.getOptions(prototype[method]) !== undefined);
  }

  /**
   * Two handlers may share a consumer only when each names it (`consumer`) and they are entries of
   * different transports: one business event reaching the service by several ways (a webhook and
   * a queue), processed once. They must then claim it alike (same mode and store). A default name
   * shared, or one name on two handlers of one transport (a copy, an inherited method), is refused.
   */
  private checkConsumersAreUnique(handlers: readonly DiscoveredHandler[]): void {
    const byConsumer = new Map<string, DiscoveredHandler>();
    for (const found of handlers) {
      const twin = byConsumer.get(found.handler.consumer);
      if (twin && !(twin.handler.namesConsumer && found.handler.namesConsumer && entryOf(twin) !== entryOf(found))) {
        throw new IdempotencyConsumerConflictError(found.handler.consumer, [twin, found].map(label), [twin, found].map((each) => each.handler.legacyConsumer));
      }
      if (twin && (twin.handler.mode !== found.handler.mode || twin.handler.store !== found.handler.store)) {
        throw new IdempotencyOptionsError(discoveryMessages.sharedConsumerMismatch(found.handler.consumer, [twin, found].map(label)));
      }
      byConsumer.set(found.handler.consumer, found);
    }
  }

  private checkStore({ name, mode, store }: ResolvedHandler): void {
    if (!this.stores.names().includes(store)) {
      throw new IdempotencyOptionsError(discoveryMessages.unknownStore(name, store, this.stores.names()));
    }
    if (mode === 'transaction' && store !== POSTGRES_STORE) {
      throw new IdempotencyOptionsError(discoveryMessages.transactionalModeNeedsPostgres(name, store));
    }
  }

  /**
   * Routes keyed by the client's `Idempotency-Key` with no scope, behind a guard of their own, of
   * their controller or of the application (`APP_GUARD`): their callers are told apart, but their
   * keys are not. Each is warned about once, here, and not again at its requests.
   */
  private warnOfUnscopedGuardedRoutes(handlers: readonly DiscoveredHandler[]): void {
    let globalGuards: string[] | undefined;
    for (const { handler, patterns, provider, guards } of handlers) {
      if (patterns || provider || !handler.clientKey || handler.scope !== undefined) {
        continue;
      }
      globalGuards ??= globalGuardNames(this.modules);
      const all = [...new Set([...globalGuards, ...guards])];
      if (all.length > 0) {
        this.warnedUnscoped.add(handler);
        this.logger.warn(discoveryMessages.unscopedGuardedClientKey(handler.name, handler.consumer, all));
      }
    }
  }

  /** Whether `handler` was warned about at start-up as keyed by the client without a scope, behind a guard. */
  isWarnedUnscoped(handler: ResolvedHandler): boolean {
    return this.warnedUnscoped.has(handler);
  }

  /** Senders that handlers name but `senders` does not declare: their retention goes unchecked. */
  private warnOfUndeclaredSenders(handlers: readonly DiscoveredHandler[]): void {
    const undeclared = new Set<string>();
    for (const { handler } of handlers) {
      if (typeof handler.sender === 'string' && handler.sender !== DEFAULT_SENDER && !(handler.sender in this.options.senderHorizonsMs)) {
        undeclared.add(handler.sender);
      }
    }
    if (undeclared.size > 0) {
      this.logger.warn(discoveryMessages.undeclaredSenders([...undeclared]));
    }
  }

  private checkRetention({ name, sender: handlerSender, retentionMs }: ResolvedHandler): void {
    const horizons = this.options.senderHorizonsMs;
    const dynamic = typeof handlerSender === 'function';
    const sender = dynamic ? longestHorizonSender(horizons) : (handlerSender as string);
    const horizonMs = sender === undefined ? undefined : horizons[sender];
    if (sender === undefined || horizonMs === undefined || retentionMs >= horizonMs) {
      return;
    }
    const retention = formatDuration(retentionMs);
    const horizon = formatDuration(horizonMs);
    const explain = dynamic ? discoveryMessages.retentionTooShortForAnySender : discoveryMessages.retentionTooShort;
    throw new IdempotencyRetentionError(explain(name, retention, sender, horizon), name, retention, sender, horizon);
  }
}

/**
 * Methods whose answer a key must not freeze: a GET, HEAD or OPTIONS (or `@All()`, which takes
 * them) is safe to repeat, and a recorded answer would be replayed stale for the whole retention.
 */
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'ALL']);

/**
 * The handlers with what each shares with the others: whether its consumer is another's too
 * (refused at start-up unless each names it), and how many idempotent `@EventPattern` handlers
 * each of its patterns reaches (one number for a handler whose patterns all reach as many).
 */
function withSharingAndFanOut(handlers: readonly Omit<DiscoveredHandler, 'shared' | 'fanOut'>[]): DiscoveredHandler[] {
  const consumers = new Map<string, number>();
  const eventHandlers = new Map<string, number>();
  for (const { handler, patterns } of handlers) {
    consumers.set(handler.consumer, (consumers.get(handler.consumer) ?? 0) + 1);
    for (const pattern of patterns?.isEvent ? patterns.patterns : []) {
      eventHandlers.set(patternKey(pattern), (eventHandlers.get(patternKey(pattern)) ?? 0) + 1);
    }
  }
  const anyPattern = (pattern: string) => eventHandlers.get(patternKey(pattern)) ?? 0;
  return handlers.map((found) => {
    const counts = new Set(found.patterns?.patterns.map((pattern) => eventHandlers.get(patternKey(pattern)) ?? 0) ?? [0]);
    const [only] = counts;
    return { ...found, shared: (consumers.get(found.handler.consumer) ?? 0) > 1, fanOut: counts.size === 1 ? () => only : anyPattern };
  });
}

/** The way a handler's deliveries come in: HTTP, a microservice transport, or a provider's framework. */
function entryOf({ patterns, provider }: DiscoveredHandler): string {
  return provider ? provider.kind.transport : patterns ? `microservice ${String(patterns.transport ?? 'any')}` : 'http';
}

function label(found: DiscoveredHandler): string {
  return `${found.handler.name} (in ${found.moduleName})`;
}

function longestHorizonSender(horizons: Record<string, number>): string | undefined {
  return Object.keys(horizons).sort((a, b) => horizons[b] - horizons[a])[0];
}
