import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { IdempotencyExplorer } from '../../discovery/idempotency.explorer.js';
import { IdempotencyOptionsError } from '../../errors/idempotency-options.error.js';
import { golevelupMessages } from './golevelup.messages.js';
import { golevelupRabbitHandlerKind, type RabbitHandlerConfig, rabbitHandlerConfig } from './golevelup-rabbitmq.handler-kind.js';
import { type GolevelupRabbitmq, GolevelupRabbitmqPackage } from './golevelup-rabbitmq.package.js';

/** What the check reads of a golevelup connection's configuration. */
interface ConnectionConfig {
  readonly name?: string;
  readonly handlers?: Record<string, unknown>;
  readonly defaultHandler?: string;
  readonly defaultSubscribeErrorBehavior?: string;
}

/**
 * Loads golevelup when an idempotent handler is one of its subscriptions, and refuses at start-up, before golevelup subscribes, an idempotent golevelup handler whose
 * subscription would lose messages or that the module cannot settle: one consumed with
 * `noAck: true`, one whose failures golevelup acks (`errorBehavior: ACK`, `ackErrorHandler`, or the
 * connection's `defaultSubscribeErrorBehavior: ACK`), a `@RabbitRPC` handler, a batch subscriber.
 * Each subscription is checked as golevelup will register it: with the module's `handlers` entry.
 */
@Injectable()
export class GolevelupSubscriptionCheck implements OnModuleInit {
  constructor(
    private readonly golevelupPackage: GolevelupRabbitmqPackage,
    private readonly explorer: IdempotencyExplorer,
    private readonly moduleRef: ModuleRef,
  ) {}

  async onModuleInit(): Promise<void> {
    const subscribers = this.explorer.discovered().flatMap(({ handler, provider }) => (provider?.kind === golevelupRabbitHandlerKind ? [{ handler, provider }] : []));
    if (subscribers.length === 0) {
      return;
    }
    const golevelup = await this.golevelupPackage.load();
    const connections = this.connections(golevelup);
    for (const { handler, provider } of subscribers) {
      const config = rabbitHandlerConfig((provider.wrapper.metatype as { prototype: Record<string, unknown> }).prototype[provider.methodName])!;
      for (const connection of connections) {
        if (config.connection && config.connection !== connection.name) {
          continue;
        }
        const entries = golevelup.resolveHandlerConfigs((connection.handlers ?? {}) as never, config.name || connection.defaultHandler) as (RabbitHandlerConfig | undefined)[];
        for (const entry of entries) {
          const problem = this.problemOf(golevelup, { ...config, ...entry }, connection);
          if (problem) {
            throw new IdempotencyOptionsError(problem(handler.name));
          }
        }
      }
    }
  }

  private problemOf(golevelup: GolevelupRabbitmq, config: RabbitHandlerConfig, connection: ConnectionConfig): ((handler: string) => string) | undefined {
    if (config.type !== 'subscribe' || config.batchOptions) {
      return golevelupMessages.golevelupHandlerUnsupported;
    }
    if (config.queueOptions?.consumerOptions?.noAck === true) {
      return golevelupMessages.golevelupAutoAcknowledged;
    }
    const errorBehavior = config.errorHandler
      ? config.errorHandler === golevelup.ackErrorHandler
        ? golevelup.MessageHandlerErrorBehavior.ACK
        : undefined
      : (config.errorBehavior ?? connection.defaultSubscribeErrorBehavior);
    return errorBehavior === golevelup.MessageHandlerErrorBehavior.ACK ? golevelupMessages.golevelupAcksFailures : undefined;
  }

  /** The configurations of golevelup's connections in this application; none when it imports no `RabbitMQModule`. */
  private connections(golevelup: GolevelupRabbitmq): ConnectionConfig[] {
    let manager: InstanceType<GolevelupRabbitmq['AmqpConnectionManager']>;
    try {
      manager = this.moduleRef.get(golevelup.AmqpConnectionManager, { strict: false });
    } catch {
      return [];
    }
    return manager.getConnections().map((connection) => connection.configuration as ConnectionConfig);
  }
}
