import type { Type } from '@nestjs/common';
import { CONTROLLER_WATERMARK } from '@nestjs/common/constants.js';
import { IdempotencyUnsupportedHandlerError } from '../errors/idempotency.errors.js';
import { transportMessages } from './transport.messages.js';

/** Runs one call of an idempotent provider handler: `run` calls the method itself, with the call's arguments unless given others. */
export type ProviderCallEntry = (args: unknown[], run: (callArgs?: unknown[]) => Promise<unknown>) => Promise<unknown>;

/** The entry of each enlisted provider instance, by method name. */
const entries = new WeakMap<object, Map<string | symbol, ProviderCallEntry>>();

/**
 * What enlists the instances of each running application, asked when a call finds its instance
 * not enlisted yet: a framework may call a handler before the module's hooks run (a worker
 * started by its module's `onModuleInit`).
 */
const enlisters = new Set<() => void>();

/** Registers what enlists one application's provider handlers; returns its removal, for its shutdown. */
export function registerEnlister(enlist: () => void): () => void {
  enlisters.add(enlist);
  return () => enlisters.delete(enlist);
}

function entryOf(instance: object, methodName: string | symbol): ProviderCallEntry | undefined {
  const entry = entries.get(instance)?.get(methodName);
  if (entry || enlisters.size === 0) {
    return entry;
  }
  enlisters.forEach((enlist) => enlist());
  return entries.get(instance)?.get(methodName);
}

/**
 * Wraps a method that carries `@IdempotentHandler()`, for the frameworks that call a provider's
 * method without Nest's interceptors (BullMQ, SQS): a call on an instance the module enlisted goes
 * through its entry. A controller's method runs as it is (its interceptor is the entry), and a
 * handler whose calls go through interceptors through a pass-through entry; a call on an instance nobody enlisted is refused,
 * never run unclaimed. The wrapper carries the method's metadata and name, so Nest and the
 * frameworks read it as the method itself.
 */
export function wrapForProviderCalls(method: (...args: unknown[]) => unknown, methodName: string | symbol): (...args: unknown[]) => unknown {
  const wrapper = function (this: object, ...args: unknown[]): unknown {
    if (isController(this)) {
      return method.apply(this, args);
    }
    const entry = entryOf(this, methodName);
    if (entry) {
      return entry(args, async (callArgs = args) => method.apply(this, callArgs));
    }
    const name = `${this.constructor.name}.${String(methodName)}`;
    throw new IdempotencyUnsupportedHandlerError(transportMessages.providerNotEnlisted(name), name);
  };
  for (const key of Reflect.getMetadataKeys(method)) {
    Reflect.defineMetadata(key, Reflect.getMetadata(key, method), wrapper);
  }
  Object.defineProperty(wrapper, 'name', { value: method.name });
  return wrapper;
}

/** Routes the calls of `methodName` on `instance` through `entry` (the module's, or the testing module's pass-through). */
export function enlistProviderCalls(instance: object, methodName: string | symbol, entry: ProviderCallEntry): void {
  let byMethod = entries.get(instance);
  if (!byMethod) {
    byMethod = new Map();
    entries.set(instance, byMethod);
  }
  byMethod.set(methodName, entry);
}

/** Whether each class is a controller, read once: the check runs on every call of a controller's idempotent method. */
const controllers = new WeakMap<object, boolean>();

function isController(instance: object): boolean {
  let known = controllers.get(instance.constructor);
  if (known === undefined) {
    known = Reflect.getMetadata(CONTROLLER_WATERMARK, instance.constructor as Type) === true;
    controllers.set(instance.constructor, known);
  }
  return known;
}
