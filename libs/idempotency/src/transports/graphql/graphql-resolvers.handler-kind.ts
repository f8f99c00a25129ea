import type { Type } from '@nestjs/common';
import type { ProviderHandlerKind } from '../message-transport.js';

/** The transport's name in metrics, traces and logs. */
export const GRAPHQL_TRANSPORT = 'graphql';

/**
 * The metadata `@nestjs/graphql` sets on a resolver's method: its root type (`'Mutation'`,
 * `'Query'`, `'Subscription'`; the parent type's name for a `@ResolveField()`) and its field's name
 * when the decorator gives one. Read by key, so the package is not loaded to find resolvers.
 * @internal
 */
export const RESOLVER_TYPE_METADATA = 'graphql:resolver_type';
/** @internal */
export const RESOLVER_NAME_METADATA = 'graphql:resolver_name';

/** A resolver method as `@nestjs/graphql` declares it: its root (or parent) type and its field. @internal */
export interface ResolverField {
  /** `'Mutation'`, `'Query'`, `'Subscription'`, or a `@ResolveField()`'s parent type (undefined when the resolver names none). */
  readonly type: string | undefined;
  /** The field's name in the schema: the decorator's `name`, else the method's. */
  readonly field: string;
}

/** The GraphQL field that `methodName` of `target` resolves; undefined when it is no resolver method. */
export function resolverField(target: Type, methodName: string): ResolverField | undefined {
  const method = target.prototype[methodName] as object | undefined;
  if (typeof method !== 'function' || !Reflect.hasMetadata(RESOLVER_TYPE_METADATA, method)) {
    return undefined;
  }
  const type = Reflect.getMetadata(RESOLVER_TYPE_METADATA, method) as string | undefined;
  const name = Reflect.getMetadata(RESOLVER_NAME_METADATA, method) as string | undefined;
  return { type, field: name ?? methodName };
}

/**
 * Resolver methods of `@nestjs/graphql`: Nest calls them through its interceptors (context type
 * `graphql`), so `GraphqlTransport` reads their deliveries. The default consumer is the field's
 * schema coordinate: `graphql Mutation.grantCredit`. Only a `@Mutation()` is accepted, at start-up
 * (`GraphqlResolverCheck`).
 * @internal
 */
export const GRAPHQL_RESOLVERS: ProviderHandlerKind = {
  transport: GRAPHQL_TRANSPORT,
  contract(target: Type, methodName: string): string | undefined {
    const resolver = resolverField(target, methodName);
    return resolver && `graphql ${resolver.type ?? 'field'}.${resolver.field}`;
  },
};
