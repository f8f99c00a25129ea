import { type ExecutionContext, Injectable } from '@nestjs/common';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from '../../idempotency.constants.js';
import { type HeaderSource, requestKeyHeader } from '../http/header-text.js';
import type { InboundMessage, MessageTransport } from '../message-transport.js';
import { answerOf, type GraphqlResolveInfo, recordAnswer } from './graphql-replay.js';
import { GRAPHQL_TRANSPORT } from './graphql-resolvers.handler-kind.js';

/** What the transport reads of a resolver's GraphQL context: the HTTP request that carries the operation, as the Apollo driver puts it (`req`). */
interface GraphqlContext {
  readonly req?: HeaderSource & {
    /** Express: the response the GraphQL answer is sent in. */
    readonly res?: { setHeader(name: string, value: string): unknown };
  };
}

/**
 * A `@Mutation()` of `@nestjs/graphql`, read from Nest's execution context alone
 * (`getArgs()`: root, arguments, GraphQL context, info), so the package is not loaded: the
 * payload is the mutation's arguments (a `key: { body: 'input.id' }` is read from them, and
 * they are what the default fingerprint covers); the default key and any `key: { header }` come
 * from the headers of the HTTP request that carries the operation (the context's `req`). A twin
 * in flight is refused at once, as over HTTP. The mutation's result is recorded as its client
 * receives it (`recordAnswer`) and answered from that record, the first time as on every duplicate
 * (`answerOf`), so the two are one; a duplicate's HTTP response is marked
 * `Idempotent-Replayed: true`, where the context reaches it (Express's `req.res`). Errors are
 * answered as GraphQL errors by `IdempotencyErrorFilter`.
 */
@Injectable()
export class GraphqlTransport implements MessageTransport {
  readonly name = GRAPHQL_TRANSPORT;
  readonly messageIdSource = `the ${IDEMPOTENCY_KEY_HEADER} header`;
  readonly defaultInFlight = 'reject' as const;

  read(context: ExecutionContext): InboundMessage | undefined {
    if (context.getType<string>() !== 'graphql') {
      return undefined;
    }
    const [, args, graphqlContext, info] = context.getArgs<[unknown, unknown, GraphqlContext | undefined, GraphqlResolveInfo]>();
    const request = graphqlContext?.req;
    const header = (name: string) => requestKeyHeader(request, name.toLowerCase(), `the ${name} header`);
    return {
      payload: args,
      get messageId() {
        return header(IDEMPOTENCY_KEY_HEADER);
      },
      header,
      request: args,
      answering: {
        record: (reply) => recordAnswer(reply, info.returnType, graphqlContext, info, `${context.getClass().name}.${context.getHandler().name}`),
        answer: (recorded, duplicate) => {
          if (duplicate) {
            request?.res?.setHeader(IDEMPOTENT_REPLAYED_HEADER, 'true');
          }
          return answerOf(recorded, info.returnType, info.schema);
        },
      },
    };
  }
}
