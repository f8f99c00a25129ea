import { Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { Subscription } from 'rxjs';
import { IdempotencyExplorer } from '../../discovery/idempotency.explorer.js';
import { IdempotencyOptionsError } from '../../errors/idempotency-options.error.js';
import { RMQ_TRANSPORT } from './rmq.constants.js';
import { rmqMessages } from './rmq.messages.js';

/** What the check reads of Nest's `ServerRMQ` (its `noAck` option, its queue, its handlers). */
interface RmqServer {
  readonly transportId?: unknown;
  readonly noAck?: boolean;
  readonly queue?: string;
  getHandlers(): Map<string, unknown>;
  normalizePattern(pattern: unknown): string;
  listen(callback: (error?: unknown) => void): unknown;
}

/**
 * Refuses a RabbitMQ consumer that auto-acknowledges (`noAck: true`, Nest's default) and delivers
 * to an idempotent handler: the module acknowledges each message itself after its commit, which
 * an auto-acknowledging channel answers by closing. Servers connected before the application
 * starts fail its start-up; every server's own `listen()` refuses before it connects to the broker,
 * which covers those started before the application's hooks ran (a hybrid application's
 * `connectMicroservice()` then `startAllMicroservices()` before `listen()`) and those connected later.
 */
@Injectable()
export class RmqConsumerCheck implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly servers: RmqServer[] = [];
  private readonly subscription: Subscription;

  constructor(
    private readonly modules: ModulesContainer,
    private readonly explorer: IdempotencyExplorer,
  ) {
    // From construction, not onModuleInit(): a hybrid application may start its servers before any module hook runs.
    this.subscription = this.modules.getRpcTargetRegistry().subscribe((target: unknown) => {
      const server = target as RmqServer;
      if (server.transportId !== RMQ_TRANSPORT || this.servers.includes(server)) {
        return;
      }
      this.servers.push(server);
      const listen = server.listen.bind(server);
      Object.assign(server, {
        listen: (callback: (error?: unknown) => void) => {
          const problem = this.problemOf(server);
          return problem ? callback(problem) : listen(callback);
        },
      });
    });
  }

  onApplicationBootstrap(): void {
    for (const server of this.servers) {
      const problem = this.problemOf(server);
      if (problem) {
        throw problem;
      }
    }
  }

  onModuleDestroy(): void {
    this.subscription.unsubscribe();
  }

  private problemOf(server: RmqServer): IdempotencyOptionsError | undefined {
    if (server.noAck === false) {
      return undefined;
    }
    const registered = server.getHandlers();
    for (const { handler, patterns } of this.explorer.discovered()) {
      const bound = patterns && (patterns.transport === undefined || patterns.transport === RMQ_TRANSPORT);
      const pattern = bound ? patterns.patterns.find((candidate) => registered.has(server.normalizePattern(candidate))) : undefined;
      if (pattern !== undefined) {
        return new IdempotencyOptionsError(rmqMessages.autoAcknowledgedQueue(server.queue ?? '(unnamed)', handler.name));
      }
    }
    return undefined;
  }
}
