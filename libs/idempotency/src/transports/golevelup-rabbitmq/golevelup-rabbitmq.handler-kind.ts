import type { Type } from '@nestjs/common';
import type { ProviderHandlerKind } from '../message-transport.js';

/** The transport's name in metrics, traces and logs. */
export const GOLEVELUP_RABBITMQ_TRANSPORT = 'golevelup-rabbitmq';

/** What the module reads of a `@RabbitSubscribe` / `@RabbitRPC` configuration. */
export interface RabbitHandlerConfig {
  readonly type?: string;
  readonly name?: string;
  readonly queue?: string;
  readonly exchange?: string;
  readonly routingKey?: string | string[];
  readonly connection?: string;
  readonly errorBehavior?: string;
  readonly errorHandler?: unknown;
  readonly batchOptions?: unknown;
  readonly queueOptions?: {
    readonly consumerOptions?: { readonly noAck?: boolean };
    readonly deadLetterExchange?: string;
    readonly deadLetterRoutingKey?: string;
    readonly arguments?: Record<string, unknown>;
  };
}

/**
 * The configuration golevelup's `@RabbitSubscribe` / `@RabbitRPC` stores on a method, found by its
 * metadata key's description (`Symbol('RABBIT_HANDLER')`), so the package is not loaded to find it.
 */
export function rabbitHandlerConfig(method: unknown): RabbitHandlerConfig | undefined {
  if (typeof method !== 'function') {
    return undefined;
  }
  const key = Reflect.getMetadataKeys(method).find((candidate) => typeof candidate === 'symbol' && candidate.description === 'RABBIT_HANDLER');
  return key === undefined ? undefined : (Reflect.getMetadata(key, method) as RabbitHandlerConfig);
}

/**
 * `@RabbitSubscribe` methods of providers: golevelup calls them through Nest's interceptors
 * (context type `rmq`), so `GolevelupRabbitTransport` reads their deliveries. The default
 * consumer is the subscription's contract: `rabbitmq queue <queue>`, else
 * `rabbitmq <exchange> <routingKey>`, else `rabbitmq handler <name>` (the module's `handlers` entry).
 * @internal
 */
export const golevelupRabbitHandlerKind: ProviderHandlerKind = {
  transport: GOLEVELUP_RABBITMQ_TRANSPORT,
  contract(target: Type, methodName: string): string | undefined {
    const config = rabbitHandlerConfig(target.prototype[methodName]);
    if (!config) {
      return undefined;
    }
    if (config.queue) {
      return `rabbitmq queue ${config.queue}`;
    }
    if (config.exchange) {
      return `rabbitmq ${config.exchange} ${([] as string[]).concat(config.routingKey ?? '#').join(' | ')}`;
    }
    return `rabbitmq handler ${config.name ?? `${target.name}.${methodName}`}`;
  },
};
