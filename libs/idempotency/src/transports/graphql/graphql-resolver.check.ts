import { Injectable, type OnModuleInit, type Type } from '@nestjs/common';
import { IdempotencyMetadataAccessor } from '../../decorators/idempotency-metadata.accessor.js';
import { IdempotencyExplorer } from '../../discovery/idempotency.explorer.js';
import { IdempotencyOptionsError, IdempotencyUnsupportedHandlerError } from '../../errors/idempotency.errors.js';
import { graphqlMessages } from './graphql.messages.js';
import { GRAPHQL_RESOLVERS, resolverField } from './graphql-resolvers.handler-kind.js';

/**
 * Refuses at start-up the idempotent resolvers whose answer cannot be replayed: a query, a
 * subscription or a field resolver (only a `@Mutation()` changes state); a mutation that records
 * its status alone (`record: 'status'`, its own or the module's: a duplicate would get no result); a request-scoped
 * resolver, whose per-request instances the module cannot enlist.
 */
@Injectable()
export class GraphqlResolverCheck implements OnModuleInit {
  constructor(
    private readonly explorer: IdempotencyExplorer,
    private readonly accessor: IdempotencyMetadataAccessor,
  ) {}

  onModuleInit(): void {
    for (const { handler, provider } of this.explorer.discovered()) {
      if (provider?.kind !== GRAPHQL_RESOLVERS) {
        continue;
      }
      const resolver = provider.wrapper.metatype as Type;
      const { type } = resolverField(resolver, provider.methodName)!;
      if (type !== 'Mutation') {
        throw new IdempotencyUnsupportedHandlerError(graphqlMessages.notAMutation(handler.name, type), handler.name);
      }
      if (handler.record === 'status') {
        const ownRecord = this.accessor.getOptions(resolver.prototype[provider.methodName] as object)?.record;
        throw new IdempotencyOptionsError(ownRecord === undefined ? graphqlMessages.statusNotRecordedByModule(handler.name) : graphqlMessages.statusNotRecorded(handler.name));
      }
      if (!provider.wrapper.isDependencyTreeStatic()) {
        throw new IdempotencyUnsupportedHandlerError(graphqlMessages.requestScoped(handler.name), handler.name);
      }
    }
  }
}
