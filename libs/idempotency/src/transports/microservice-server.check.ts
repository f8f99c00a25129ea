import { Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { Subscription } from 'rxjs';
import type { ResolvedHandler } from '../delivery/resolved-handler.js';
import { IdempotencyExplorer } from '../discovery/idempotency.explorer.js';
import type { IdempotencyOptionsError } from '../errors/idempotency.errors.js';

/** What a boot check reads of a Nest microservice server: its transport, its handlers, its `listen()`. */
export interface MicroserviceServer {
  readonly transportId?: unknown;
  getHandlers(): Map<string, unknown>;
  normalizePattern(pattern: unknown): string;
  listen(callback: (error?: unknown) => void): unknown;
}

/**
 * A transport adapter's boot check of the Nest microservice servers of its transport: refuses a
 * server whose settings would lose messages (one that acknowledges before the commit, say) when it
 * delivers to an idempotent handler. Servers connected before the application starts fail its
 * start-up; every server's own `listen()` refuses before it connects to the broker, which covers
 * those started before the application's hooks ran (a hybrid application's `connectMicroservice()`
 * then `startAllMicroservices()` before `listen()`) and those connected later.
 */
@Injectable()
export abstract class MicroserviceServerCheck<Server extends MicroserviceServer> implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly servers: Server[] = [];
  private readonly subscription: Subscription;

  constructor(
    modules: ModulesContainer,
    private readonly explorer: IdempotencyExplorer,
  ) {
    // From construction, not onModuleInit(): a hybrid application may start its servers before any module hook runs.
    this.subscription = modules.getRpcTargetRegistry().subscribe((target: unknown) => {
      const server = target as MicroserviceServer;
      if (!this.isChecked(server) || this.servers.includes(server)) {
        return;
      }
      this.servers.push(server);
      const listen = server.listen.bind(server);
      Object.assign(server, {
        listen: (callback: (error?: unknown) => void) => {
          const problem = this.problemOf(server);
          if (problem) {
            return callback(problem);
          }
          const listening: unknown = listen(callback);
          // A server whose listen() rejects instead of calling back would end the process with an unhandled rejection.
          return listening instanceof Promise ? listening.catch((error: unknown) => callback(this.refusalOf(server, error))) : listening;
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

  /** Whether `server` is of this check's transport. */
  protected abstract isChecked(server: MicroserviceServer): server is Server;

  /** Why `server` would lose messages of an idempotent handler; undefined when it would not. */
  protected abstract problemOf(server: Server): IdempotencyOptionsError | undefined;

  /** What a boot error says when `server`'s own `listen()` failed with `error`: the error itself, unless the check explains it. */
  protected refusalOf(_server: Server, error: unknown): unknown {
    return error;
  }

  /**
   * The first idempotent handler the server delivers to, of those bound to its transport (`@EventPattern`
   * handlers only, when `eventsOnly`); undefined when none.
   */
  protected idempotentHandlerOf(server: Server, eventsOnly = false): ResolvedHandler | undefined {
    const registered = server.getHandlers();
    for (const { handler, patterns } of this.explorer.discovered()) {
      const bound = patterns && (!eventsOnly || patterns.isEvent) && (patterns.transport === undefined || patterns.transport === server.transportId);
      if (bound && patterns.patterns.some((pattern) => registered.has(server.normalizePattern(pattern)))) {
        return handler;
      }
    }
    return undefined;
  }
}
