import { applyDecorators, RequestMethod, SetMetadata, type Type, UseFilters, UseInterceptors } from '@nestjs/common';
import { METHOD_METADATA } from '@nestjs/common/constants.js';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { HANDLER_OPTIONS_METADATA } from './idempotency-metadata.constants.js';
import { handlerMessages } from './idempotent-handler.messages.js';
import { IdempotencyInterceptor } from '../transports/idempotency.interceptor.js';
import { IdempotencyErrorFilter } from '../transports/idempotency-error.filter.js';
import { RESOLVER_TYPE_METADATA } from '../transports/graphql/graphql-resolvers.handler-kind.js';
import { wrapForProviderCalls } from '../transports/provider-calls.js';
import type { IdempotentHandlerOptions } from '../options/idempotent-handler.options.js';

/** The HTTP methods that change state, whose routes a class-level `@IdempotentHandler()` makes idempotent. */
const MUTATING_METHODS: ReadonlySet<unknown> = new Set([RequestMethod.POST, RequestMethod.PUT, RequestMethod.PATCH, RequestMethod.DELETE]);

/** The method each wrapper made by the decorator wraps, so that a class-level decorator wraps the method, never a wrapper. */
const originals = new WeakMap<object, (...args: unknown[]) => unknown>();

/**
 * Makes a handler exactly-once: its message id is claimed in a new database transaction, the
 * handler runs in that same transaction (reach it through `IdempotencyContext.manager`), and the
 * claim, the handler's writes and its response commit together. A duplicate gets the recorded
 * response (`Idempotent-Replayed: true`) without running the handler.
 *
 * On a controller or resolver class, it applies to the class's handlers that change state, its
 * own and those it inherits: routes of `@Post()`, `@Put()`, `@Patch()` and `@Delete()`, and
 * `@Mutation()`s (not `@Get()`, queries, nor message patterns). A handler's own
 * `@IdempotentHandler({ ... })` is merged over the class's options, field by field. A class with
 * none of those handlers is refused (`IdempotencyOptionsError`).
 *
 * @example
 * ```ts
 * @Post('credits')
 * @IdempotentHandler()
 * grant(@Body() body: GrantCredit) {
 *   return this.credits.grant(body.account, body.cents);
 * }
 *
 * @Post('webhooks/payments')
 * @HttpCode(200)
 * @IdempotentHandler({ key: { body: 'id' }, sender: 'payments', retention: '7d' })
 * onPaymentEvent(@Body() event: PaymentEvent) { ... }
 *
 * @Controller('orders')
 * @IdempotentHandler({ retention: '3d' }) // every POST, PUT, PATCH and DELETE of the controller
 * class OrdersController { ... }
 * ```
 */
export function IdempotentHandler(options: IdempotentHandlerOptions = {}): MethodDecorator & ClassDecorator {
  return ((target: object, methodName?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (methodName === undefined || descriptor === undefined) {
      decorateClass(target as Type, options);
      return undefined;
    }
    const method = descriptor.value as (...args: unknown[]) => unknown;
    applyDecorators(SetMetadata(HANDLER_OPTIONS_METADATA, options), UseInterceptors(IdempotencyInterceptor), UseFilters(IdempotencyErrorFilter))(target, methodName, descriptor);
    // For the frameworks that call a provider's method without interceptors (BullMQ, SQS).
    descriptor.value = wrapForProviderCalls(method, methodName);
    originals.set(descriptor.value as object, method);
    return descriptor;
  }) as MethodDecorator & ClassDecorator;
}

/**
 * Gives each handler of `target` that changes state its own decorated copy on `target`'s
 * prototype, with `options` under its own: a method inherited from a base class keeps its
 * metadata there as it is.
 */
function decorateClass(target: Type, options: IdempotentHandlerOptions): void {
  const prototype = target.prototype as Record<string | symbol, unknown>;
  const methods = methodsOf(prototype).filter(([, method]) => changesState(method));
  if (methods.length === 0) {
    throw new IdempotencyOptionsError(handlerMessages.classWithoutMutations(target.name));
  }
  for (const [name, method] of methods) {
    const own = Reflect.getMetadata(HANDLER_OPTIONS_METADATA, method) as IdempotentHandlerOptions | undefined;
    const original = originals.get(method) ?? (method as (...args: unknown[]) => unknown);
    const copy = wrapForProviderCalls(original, name);
    // The copy carries the method's metadata as decorated (a route decorator above @IdempotentHandler() set it on the wrapper).
    for (const key of Reflect.getMetadataKeys(method)) {
      Reflect.defineMetadata(key, Reflect.getMetadata(key, method), copy);
    }
    originals.set(copy, original);
    const descriptor: PropertyDescriptor = { value: copy, writable: true, configurable: true, enumerable: false };
    const merged = { ...options, ...own };
    const decorate = own ? SetMetadata(HANDLER_OPTIONS_METADATA, merged) : applyDecorators(SetMetadata(HANDLER_OPTIONS_METADATA, merged), UseInterceptors(IdempotencyInterceptor), UseFilters(IdempotencyErrorFilter));
    decorate(prototype, name, descriptor);
    Object.defineProperty(prototype, name, descriptor);
  }
}

/** The methods of a class's prototype, its own and those it inherits, each by the name it answers to. */
function methodsOf(prototype: object): [string, object][] {
  const methods = new Map<string, object>();
  for (let host = prototype; host !== Object.prototype && host !== null; host = Object.getPrototypeOf(host) as object) {
    for (const name of Object.getOwnPropertyNames(host)) {
      const { value } = Object.getOwnPropertyDescriptor(host, name)!;
      if (name !== 'constructor' && !methods.has(name) && typeof value === 'function') {
        methods.set(name, value as object);
      }
    }
  }
  return [...methods];
}

/** A route of a method that changes state, or a GraphQL mutation. */
function changesState(method: object): boolean {
  return MUTATING_METHODS.has(Reflect.getMetadata(METHOD_METADATA, method)) || Reflect.getMetadata(RESOLVER_TYPE_METADATA, method) === 'Mutation';
}
