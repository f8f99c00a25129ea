import { Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { Subscription } from 'rxjs';
import { IdempotencyExplorer } from '../../discovery/idempotency.explorer.js';
import { IdempotencyOptionsError } from '../../errors/idempotency-options.error.js';
import { jetStreamMessages } from './jetstream.messages.js';

/** The description of the plugin's `NATS_JETSTREAM_TRANSPORT` symbol, its servers' `transportId`. */
const JETSTREAM_TRANSPORT = 'NATS_JETSTREAM_TRANSPORT';

/** What the check reads of the plugin's `NatsJetStreamServer` (its consumer options, its handlers). */
interface JetStreamServer {
  readonly transportId?: unknown;
  readonly options?: { readonly consumerOptions?: { readonly manualAck?: boolean; readonly ackPolicy?: string; readonly durable?: string } };
  getHandlers(): Map<string, unknown>;
  normalizePattern(pattern: unknown): string;
  listen(callback: (error?: unknown) => void): unknown;
}

/**
 * Refuses a JetStream consumer of `@nestjs-plugins/nestjs-nats-jetstream-transport` that would
 * lose messages, when it delivers to an idempotent handler: without `manualAck: true` the client
 * acknowledges each message as soon as the handler was called, before its commit; with
 * `ackPolicy: 'None'` nothing is ever redelivered, and with `'All'` one message's ack also
 * acknowledges every earlier one still in flight. The server's own `listen()` refuses before it
 * subscribes, and servers connected before the application starts fail its start-up.
 */
@Injectable()
export class JetStreamConsumerCheck implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly servers: JetStreamServer[] = [];
  private readonly subscription: Subscription;

  constructor(
    private readonly modules: ModulesContainer,
    private readonly explorer: IdempotencyExplorer,
  ) {
    // From construction, not onModuleInit(): a hybrid application may start its servers before any module hook runs.
    this.subscription = this.modules.getRpcTargetRegistry().subscribe((target: unknown) => {
      const server = target as JetStreamServer;
      if (!isJetStreamServer(server) || this.servers.includes(server)) {
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

  private problemOf(server: JetStreamServer): IdempotencyOptionsError | undefined {
    const { manualAck, ackPolicy, durable } = server.options?.consumerOptions ?? {};
    const setting = manualAck !== true ? `manualAck: ${String(manualAck)}` : ackPolicy === 'None' || ackPolicy === 'All' ? `ackPolicy: '${ackPolicy}'` : undefined;
    if (setting === undefined) {
      return undefined;
    }
    const registered = server.getHandlers();
    for (const { handler, patterns } of this.explorer.discovered()) {
      const bound = patterns?.isEvent && (patterns.transport === undefined || patterns.transport === server.transportId);
      if (bound && patterns.patterns.some((pattern) => registered.has(server.normalizePattern(pattern)))) {
        return new IdempotencyOptionsError(jetStreamMessages.jetStreamAcksWithoutCommit(durable ?? '(ephemeral)', setting, handler.name));
      }
    }
    return undefined;
  }
}

function isJetStreamServer(server: JetStreamServer): boolean {
  return typeof server.transportId === 'symbol' && server.transportId.description === JETSTREAM_TRANSPORT;
}
