import { Body, Controller, type DynamicModule, Get, Inject, Injectable, type MiddlewareConsumer, Module, type NestMiddleware, type NestModule, Post, Query } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { IdempotencyContext, IdempotencyModule, IdempotentHandler, Outbox, RabbitMqPublisher } from 'nestjs-idempotent-consumer';
import { toCreditRequest } from '../../../apps/demo-api/src/credits/credit-request.js';
import { LedgerEntry } from '../../../apps/demo-api/src/credits/ledger-entry.entity.js';
import { type ProcessUsage, processUsage } from './process-usage.js';
import { POOL_SIZE } from './bench-app.module.js';
import { grantCredit } from './credit-grant.js';
import { roundTrips } from './round-trips.js';

/** The pattern of the event every publishing arm sends. */
export const CREDIT_GRANTED = 'credit.granted';

/** What an outbox bench process is started with (`outbox-bench.main.ts`). */
export interface OutboxBenchConfig {
  readonly databaseUrl: string;
  readonly rabbitmqUrl: string;
  /** The queue every message goes to (the default exchange routes by queue name); the runner declares it. */
  readonly queue: string;
  /** The outbox table of this process, made by the runner. */
  readonly table: string;
  /** Whether this process runs the outbox relay. */
  readonly relay: boolean;
}

/** The one RabbitMQ publisher of the process: the outbox's, and the `direct` route's. */
const PUBLISHER = Symbol('OUTBOX_BENCH_PUBLISHER');
const CONFIG = Symbol('OUTBOX_BENCH_CONFIG');

/**
 * The credit handler of the bench app three ways, all `@IdempotentHandler()` on TypeORM: with no
 * event (`baseline`); publishing `credit.granted` straight to RabbitMQ once the claim committed,
 * before the answer leaves (`direct`, see `DirectPublishMiddleware`); and writing it with
 * `Outbox.publish()` in the claim's transaction (`outbox`), for the relay to send. An event's id
 * is the request's `Idempotency-Key`, so the runner can match each message to its request.
 */
@Controller()
class OutboxBenchController {
  constructor(
    private readonly idempotency: IdempotencyContext,
    private readonly outbox: Outbox,
    @Inject(CONFIG) private readonly config: OutboxBenchConfig,
  ) {}

  @Post('baseline/credits')
  @IdempotentHandler()
  async baseline(@Body() body: unknown) {
    const { account, cents } = toCreditRequest(body);
    return { account, cents, balance: await grantCredit(this.idempotency.manager, account, cents) };
  }

  /** The baseline handler; its event is published by the middleware after the COMMIT. */
  @Post('direct/credits')
  @IdempotentHandler()
  direct(@Body() body: unknown) {
    return this.baseline(body);
  }

  @Post('outbox/credits')
  @IdempotentHandler()
  async viaOutbox(@Body() body: unknown) {
    const { account, cents } = toCreditRequest(body);
    const balance = await grantCredit(this.idempotency.manager, account, cents);
    await this.outbox.publish({ to: 'rabbitmq', address: this.config.queue, pattern: CREDIT_GRANTED, payload: { account, cents }, id: this.idempotency.key });
    return { account, cents, balance };
  }

  /** For the runner: CPU time so far; `?gc=true` first runs a full garbage collection. */
  @Get('usage')
  usage(@Query('gc') gc?: string): ProcessUsage {
    return processUsage(gc);
  }

  @Get('round-trips')
  roundTrips(): { roundTrips: number } {
    return { roundTrips: roundTrips() };
  }
}

/**
 * What a user without an outbox writes: the event published to RabbitMQ on a confirm channel once
 * the claim's transaction committed, and awaited before the answer goes out. The module commits an
 * HTTP claim when the response ends and then hands the held response to the writers the response
 * had before it (`ResponseCapture`): this middleware's `end`, which publishes with the outbox's own
 * `RabbitMqPublisher` (so both arms send alike), waits for the broker's confirm, and only then ends
 * the response. A publish that fails destroys the response.
 */
@Injectable()
class DirectPublishMiddleware implements NestMiddleware {
  constructor(
    @Inject(PUBLISHER) private readonly publisher: RabbitMqPublisher,
    @Inject(CONFIG) private readonly config: OutboxBenchConfig,
  ) {}

  use(request: IncomingMessage & { body?: unknown }, response: ServerResponse, next: () => void): void {
    const end = response.end.bind(response) as (...args: unknown[]) => ServerResponse;
    response.end = ((...args: unknown[]) => {
      if (response.statusCode >= 300) {
        return end(...args);
      }
      const { account, cents } = toCreditRequest(request.body);
      this.publisher
        .publish({ id: String(request.headers['idempotency-key']), address: this.config.queue, pattern: CREDIT_GRANTED, headers: {}, payload: JSON.stringify({ account, cents }), orderingKey: undefined })
        .then(
          () => end(...args),
          (error: unknown) => response.destroy(error as Error),
        );
      return response;
    }) as ServerResponse['end'];
    next();
  }
}

@Module({})
export class OutboxBenchModule implements NestModule {
  static register(config: OutboxBenchConfig): DynamicModule {
    const underTool = process.env.BENCH_UNDER_TOOL === '1';
    const publisher = new RabbitMqPublisher({ urls: [config.rabbitmqUrl] });
    return {
      module: OutboxBenchModule,
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url: config.databaseUrl, entities: [LedgerEntry], extra: { max: POOL_SIZE } }),
        IdempotencyModule.forRoot({
          retention: '7d',
          purge: { interval: false },
          // Under valgrind a pooled connection, and a broker's confirm, can take longer than the defaults.
          ...(underTool ? { connectionTimeout: '10m' as const } : {}),
          outbox: {
            publishers: { rabbitmq: publisher },
            tableName: config.table,
            relay: config.relay ? (underTool ? { publishTimeout: '10m' } : {}) : false,
          },
        }),
      ],
      controllers: [OutboxBenchController],
      providers: [
        { provide: PUBLISHER, useValue: publisher },
        { provide: CONFIG, useValue: config },
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(DirectPublishMiddleware).forRoutes('direct/credits');
  }
}
