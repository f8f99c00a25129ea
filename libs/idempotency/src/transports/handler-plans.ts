import { type ExecutionContext, Inject, Injectable, type OnApplicationBootstrap, type Type } from '@nestjs/common';
import { DeliveryCore } from '../delivery/delivery-core.js';
import type { ResolvedHandler } from '../delivery/resolved-handler.js';
import { type DiscoveredHandler, IdempotencyExplorer } from '../discovery/idempotency.explorer.js';
import { StoredConsumers } from '../discovery/stored-consumers.js';
import { IdempotencyUnsupportedHandlerError } from '../errors/idempotency.errors.js';
import { RESOLVED_OPTIONS, type ResolvedIdempotencyOptions } from '../idempotency.options.js';
import { compileHttpPlan, type HttpPlan } from './http/http-plan.js';
import { compileMessagePlan, type MessagePlan } from './message-plan.js';
import { MESSAGE_TRANSPORTS, type MessageTransport, PROVIDER_HANDLER_KINDS, type ProviderHandlerKind } from './message-transport.js';
import { transportMessages } from './transport.messages.js';

type EntryPlan = { readonly entry: 'http'; readonly plan: HttpPlan } | { readonly entry: 'message'; readonly plan: MessagePlan };

/** Every plan, found by the method Nest calls (one lookup); a method inherited by several classes, or a bound copy of one (golevelup's), by its class and name. */
interface Compiled {
  readonly byMethod: WeakMap<object, { readonly target: Type; readonly plan: EntryPlan }>;
  readonly byName: WeakMap<Type, Map<string, EntryPlan>>;
  readonly byHandler: WeakMap<ResolvedHandler, MessagePlan>;
  readonly all: readonly EntryPlan[];
}

/**
 * Every idempotent handler's plan, compiled in one pass over the handlers the explorer found, the
 * first time a plan is asked for (a framework may deliver before the module's hooks run) and at
 * the latest when the module initialises: everything a delivery reads, the store's former names
 * of the handlers added once at start-up. A delivery to a method that has no plan is refused: the
 * module found no such handler when the application started.
 * @internal
 */
@Injectable()
export class HandlerPlans implements OnApplicationBootstrap {
  private compiled: Compiled | undefined;

  constructor(
    private readonly explorer: IdempotencyExplorer,
    private readonly core: DeliveryCore,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    @Inject(MESSAGE_TRANSPORTS) private readonly transports: readonly MessageTransport[],
    @Inject(PROVIDER_HANDLER_KINDS) private readonly providerHandlerKinds: readonly ProviderHandlerKind[],
    private readonly consumers: StoredConsumers,
  ) {}

  /** Runs after `StoredConsumers` read the store's names (Nest bootstraps a provider after those it injects). */
  onApplicationBootstrap(): void {
    for (const { plan } of this.plans().all) {
      plan.formerConsumer = this.consumers.formerNameOf(plan.handler.consumer);
    }
  }

  /** The plan of the HTTP route `context` runs. @throws IdempotencyUnsupportedHandlerError when it has none. */
  http(context: ExecutionContext): HttpPlan {
    const found = this.find(context);
    if (found?.entry !== 'http') {
      throw unplanned(context);
    }
    return found.plan;
  }

  /** The plan of the message handler `context` runs. @throws IdempotencyUnsupportedHandlerError when it has none. */
  message(context: ExecutionContext): MessagePlan {
    const found = this.find(context);
    if (found?.entry !== 'message') {
      throw unplanned(context);
    }
    return found.plan;
  }

  /** The plan of a provider handler its framework calls. */
  ofProvider(handler: ResolvedHandler): MessagePlan {
    return this.plans().byHandler.get(handler)!;
  }

  private find(context: ExecutionContext): EntryPlan | undefined {
    const target = context.getClass();
    const method = context.getHandler();
    const { byMethod, byName } = this.plans();
    const found = byMethod.get(method);
    return found !== undefined && found.target === target ? found.plan : byName.get(target)?.get(method.name.replace(/^bound /, ''));
  }

  private plans(): Compiled {
    this.compiled ??= this.compile(this.explorer.discovered());
    return this.compiled;
  }

  private compile(handlers: readonly DiscoveredHandler[]): Compiled {
    const compiled: Compiled = { byMethod: new WeakMap(), byName: new WeakMap(), byHandler: new WeakMap(), all: [] };
    const planning = { scope: this.options.scope.http, replay: this.options.replay };
    for (const found of handlers) {
      const { handler, target, methodName } = found;
      const plan: EntryPlan =
        !found.patterns && !found.provider
          ? { entry: 'http', plan: compileHttpPlan(this.core, handler, found.shared, planning) }
          : { entry: 'message', plan: this.messagePlan(found) };
      const method = target.prototype[methodName] as object;
      if (!compiled.byMethod.has(method)) {
        compiled.byMethod.set(method, { target, plan });
      }
      let byName = compiled.byName.get(target);
      if (!byName) {
        byName = new Map();
        compiled.byName.set(target, byName);
      }
      byName.set(methodName, plan);
      if (plan.entry === 'message') {
        compiled.byHandler.set(handler, plan.plan);
      }
      (compiled.all as EntryPlan[]).push(plan);
    }
    return compiled;
  }

  /**
   * A message handler's plan: a provider handler's deliveries are read by its framework's adapter
   * (none where its framework calls it without interceptors), a pattern's by each adapter of Nest's
   * microservices (every adapter that is no provider framework's).
   * @throws IdempotencyUnsupportedHandlerError for a provider handler that nothing delivers to.
   */
  private messagePlan({ handler, provider, fanOut }: DiscoveredHandler): MessagePlan {
    if (!provider) {
      const frameworks = new Set(this.providerHandlerKinds.map(({ transport }) => transport));
      return compileMessagePlan(this.core, handler, this.transports.filter(({ name }) => !frameworks.has(name)), undefined, fanOut);
    }
    const adapter = this.transports.find(({ name }) => name === provider.kind.transport);
    if (!adapter && !provider.kind.calls) {
      throw new IdempotencyUnsupportedHandlerError(transportMessages.unreadHandler(handler.name, provider.kind.transport), handler.name);
    }
    return compileMessagePlan(this.core, handler, adapter ? [adapter] : [], adapter, fanOut);
  }
}

function unplanned(context: ExecutionContext): IdempotencyUnsupportedHandlerError {
  const handler = `${context.getClass().name}.${context.getHandler().name}`;
  return new IdempotencyUnsupportedHandlerError(transportMessages.unplannedHandler(handler), handler);
}
