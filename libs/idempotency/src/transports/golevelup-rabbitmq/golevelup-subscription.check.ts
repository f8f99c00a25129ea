import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModuleRef } from '@nestjs/core';
import { IdempotencyExplorer } from '../../discovery/idempotency.explorer.js';
import { IdempotencyOptionsError } from '../../errors/idempotency.errors.js';
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

/** What the check uses of a golevelup `AmqpConnection`: its configuration, and its amqplib connection for passive checks. */
interface GolevelupConnection {
  readonly configuration: ConnectionConfig;
  /** Throws while golevelup is not connected (`connectionInitOptions: { wait: false }`). */
  readonly connection: { createChannel(): Promise<ProbeChannel> };
}

/** An amqplib channel, as a passive check uses it: a failed check closes it. */
interface ProbeChannel {
  on(event: 'error', listener: () => void): unknown;
  checkExchange(exchange: string): Promise<unknown>;
  checkQueue(queue: string): Promise<unknown>;
  close(): Promise<void>;
}

/** Where a subscription's queue dead-letters: an exchange, or a queue through the default exchange (`''`). */
interface DeadLetterTarget {
  readonly exchange: string;
  readonly routingKey: string | undefined;
}

/**
 * Loads golevelup when an idempotent handler is one of its subscriptions, and refuses at start-up, before golevelup subscribes, an idempotent golevelup handler whose
 * subscription would lose messages or that the module cannot settle: one consumed with
 * `noAck: true`, one whose failures golevelup acks (`errorBehavior: ACK`, `ackErrorHandler`, or the
 * connection's `defaultSubscribeErrorBehavior: ACK`), a `@RabbitRPC` handler, a batch subscriber.
 * Each subscription is checked as golevelup will register it: with the module's `handlers` entry.
 * A subscription whose queue dead-letters (`deadLetterExchange` / `deadLetterRoutingKey`, or their
 * `x-dead-letter-*` arguments) is refused when its dead-letter exchange, or the queue it names
 * through the default exchange, does not exist on the broker (a passive check, on a channel of
 * its own): RabbitMQ drops what it dead-letters there, while the module logs it as dead-lettered.
 * A queue that a `@RabbitSubscribe` handler of the application consumes counts as existing:
 * golevelup declares it when it subscribes.
 */
@Injectable()
export class GolevelupSubscriptionCheck implements OnModuleInit {
  private queues: ReadonlySet<string> | undefined;

  constructor(
    private readonly golevelupPackage: GolevelupRabbitmqPackage,
    private readonly explorer: IdempotencyExplorer,
    private readonly moduleRef: ModuleRef,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
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
        const { configuration } = connection;
        if (config.connection && config.connection !== configuration.name) {
          continue;
        }
        const entries = golevelup.resolveHandlerConfigs((configuration.handlers ?? {}) as never, config.name || configuration.defaultHandler) as (RabbitHandlerConfig | undefined)[];
        for (const entry of entries) {
          const subscription: RabbitHandlerConfig = { ...config, ...entry };
          const problem = this.problemOf(golevelup, subscription, configuration);
          if (problem) {
            throw new IdempotencyOptionsError(problem(handler.name));
          }
          await this.checkDeadLetterTarget(subscription, connection, handler.name);
        }
      }
    }
  }

  /** Refuses a subscription whose queue dead-letters to an exchange or queue the broker does not have. */
  private async checkDeadLetterTarget(subscription: RabbitHandlerConfig, connection: GolevelupConnection, handler: string): Promise<void> {
    const target = deadLetterTargetOf(subscription);
    if (!target || (target.exchange === '' && (target.routingKey === undefined || this.subscribedQueues().has(target.routingKey)))) {
      return; // no dead-lettering, back to the routing key it came with, or a queue golevelup declares when it subscribes
    }
    let channel: ProbeChannel;
    try {
      channel = await connection.connection.createChannel();
    } catch {
      return; // not connected yet (connectionInitOptions.wait: false): nothing to check against
    }
    channel.on('error', () => undefined);
    const found = await (target.exchange === '' ? channel.checkQueue(target.routingKey!) : channel.checkExchange(target.exchange)).then(
      () => true,
      () => false,
    );
    if (found) {
      await channel.close();
      return;
    }
    const missing = target.exchange === '' ? `queue '${target.routingKey}' (through the default exchange)` : `exchange '${target.exchange}'`;
    throw new IdempotencyOptionsError(golevelupMessages.deadLetterTargetMissing(handler, subscription.queue ?? '(server-named)', missing));
  }

  /** The queues the application's `@RabbitSubscribe` handlers consume, idempotent or not: golevelup declares each when it subscribes. */
  private subscribedQueues(): ReadonlySet<string> {
    this.queues ??= new Set(
      this.discovery.getProviders().flatMap(({ metatype }) => {
        const prototype = (metatype as { prototype?: Record<string, unknown> } | undefined)?.prototype;
        return prototype ? this.scanner.getAllMethodNames(prototype).flatMap((name) => rabbitHandlerConfig(prototype[name])?.queue ?? []) : [];
      }),
    );
    return this.queues;
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

  /** golevelup's connections in this application; none when it imports no `RabbitMQModule`. */
  private connections(golevelup: GolevelupRabbitmq): GolevelupConnection[] {
    let manager: InstanceType<GolevelupRabbitmq['AmqpConnectionManager']>;
    try {
      manager = this.moduleRef.get(golevelup.AmqpConnectionManager, { strict: false });
    } catch {
      return [];
    }
    return manager.getConnections() as unknown as GolevelupConnection[];
  }
}

/** Where the subscription's queue dead-letters, by its queue options; undefined when it does not. */
function deadLetterTargetOf({ queueOptions }: RabbitHandlerConfig): DeadLetterTarget | undefined {
  const exchange = queueOptions?.deadLetterExchange ?? queueOptions?.arguments?.['x-dead-letter-exchange'];
  const routingKey = queueOptions?.deadLetterRoutingKey ?? queueOptions?.arguments?.['x-dead-letter-routing-key'];
  return typeof exchange === 'string' ? { exchange, routingKey: typeof routingKey === 'string' ? routingKey : undefined } : undefined;
}
