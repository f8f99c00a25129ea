import { Body, Controller, Get, Post, Query } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import {
  IdempotencyContext,
  IdempotencyHealthIndicator,
  IdempotencyPurgeService,
  IdempotentHandler,
  type PurgeRun,
} from 'nestjs-idempotent-consumer';
import type { DataSource } from 'typeorm';
import { toCreditRequest } from '../../../apps/demo-api/src/credits/credit-request.js';
import { exportedSpans } from './bench-tracing.js';
import { grantCredit } from './credit-grant.js';
import { type ProcessUsage, processUsage } from './process-usage.js';

/** One check of the idempotency health indicator, timed in the app process. */
export interface HealthTiming {
  /** The indicator's status: `up` or `down`. */
  status: string;
  /** How long `isHealthy()` took, in milliseconds. */
  ms: number;
}

/**
 * One credit handler as a plain transaction, as an idempotent handler, and as an idempotent handler
 * in lease mode on each store. All run the very same `grantCredit` statements, so the difference
 * between them is what exactly-once costs.
 */
@Controller()
export class BenchController {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly idempotency: IdempotencyContext,
    private readonly purgeService: IdempotencyPurgeService,
    private readonly healthIndicator: IdempotencyHealthIndicator,
  ) {}

  /** The handler without the module: its own transaction through `DataSource.transaction`. */
  @Post('plain/credits')
  async plain(@Body() body: unknown) {
    const { account, cents } = toCreditRequest(body);
    return { account, cents, balance: await this.dataSource.transaction((manager) => grantCredit(manager, account, cents)) };
  }

  /** The same handler, exactly once per `Idempotency-Key`. */
  @Post('idempotent/credits')
  @IdempotentHandler()
  async idempotent(@Body() body: unknown) {
    const { account, cents } = toCreditRequest(body);
    return { account, cents, balance: await grantCredit(this.idempotency.manager, account, cents) };
  }

  /** The handler in lease mode, its claim in PostgreSQL: the work runs in its own transaction, as the plain one's. */
  @Post('lease-postgres/credits')
  @IdempotentHandler({ mode: 'lease', store: 'postgres' })
  leasePostgres(@Body() body: unknown) {
    return this.plain(body);
  }

  /** The handler in lease mode, its claim in Redis. */
  @Post('lease-redis/credits')
  @IdempotentHandler({ mode: 'lease', store: 'redis' })
  leaseRedis(@Body() body: unknown) {
    return this.plain(body);
  }

  /**
   * For the runner: CPU time (per request, between two readings) and memory; `?gc=true` first runs
   * a full garbage collection, which the runner's `--expose-gc` allows.
   */
  @Get('usage')
  usage(@Query('gc') gc?: string): ProcessUsage {
    const spans = exportedSpans();
    return { ...processUsage(gc), ...(spans === undefined ? {} : { spans }) };
  }

  /** For case 5: one purge of every expired id, now, in this process, as the purge timer runs it. */
  @Post('purge')
  purge(): Promise<PurgeRun> {
    return this.purgeService.purgeNow();
  }

  /** For case 6: the check a `GET /health` makes of the idempotency indicator, timed here. */
  @Get('health')
  async health(): Promise<HealthTiming> {
    const started = performance.now();
    const result = await this.healthIndicator.isHealthy();
    return { status: result.idempotency.status, ms: performance.now() - started };
  }
}
