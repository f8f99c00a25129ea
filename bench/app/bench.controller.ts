import { Body, Controller, Get, Post, Query } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { IdempotencyContext, IdempotentHandler } from '@app/idempotency';
import type { DataSource } from 'typeorm';
import { toCreditRequest } from '../../apps/demo-api/src/credits/credit-request.js';
import { grantCredit } from './credit-grant.js';

/** What the app process has used so far. */
export interface ProcessUsage {
  /** Resident set size and used heap, in bytes. */
  rss: number;
  heapUsed: number;
  /** User plus system CPU time, in microseconds. */
  cpuMicros: number;
  /** Whether a full garbage collection ran just before the memory was read. */
  collected: boolean;
}

/**
 * One credit handler twice: as a plain transaction and as an idempotent handler. Both run the very
 * same `grantCredit` statements, so the difference between them is what exactly-once costs.
 */
@Controller()
export class BenchController {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly idempotency: IdempotencyContext,
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

  /**
   * For the runner: CPU time (per request, between two readings) and memory; `?gc=true` first runs
   * a full garbage collection, which the runner's `--expose-gc` allows.
   */
  @Get('usage')
  usage(@Query('gc') gc?: string): ProcessUsage {
    const collect = gc === 'true' ? (globalThis as { gc?: () => void }).gc : undefined;
    collect?.();
    const { rss, heapUsed } = process.memoryUsage();
    const { user, system } = process.cpuUsage();
    return { rss, heapUsed, cpuMicros: user + system, collected: collect !== undefined };
  }
}
