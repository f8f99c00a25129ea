import { Body, Controller, Get, Inject, Post, Query } from '@nestjs/common';
import { IdempotentHandler } from 'nestjs-idempotent-consumer';
import type { DataLayerWriter } from 'nestjs-idempotent-consumer/testing';
import { toCreditRequest } from '../../../apps/demo-api/src/credits/credit-request.js';
import { type ProcessUsage, processUsage } from './process-usage.js';
import { roundTrips } from './round-trips.js';

/** The app's `DataLayerWriter`, one of the contract suite's (`test/apps/data-layers/layer-writers.ts`). */
export const WRITER = Symbol('WRITER');

/**
 * One credit written through the app's data layer: in the layer's own transaction without the
 * module, and in the claim's transaction under `@IdempotentHandler()`. Both send the very same
 * `INSERT`, so the difference between them is what the claim costs on that layer.
 */
@Controller()
export class LayerBenchController {
  constructor(@Inject(WRITER) private readonly writer: DataLayerWriter) {}

  /** The write without the module: its own transaction of the layer (`BEGIN`, `INSERT`, `COMMIT`). */
  @Post('plain/credits')
  async plain(@Body() body: unknown) {
    const { account, cents } = toCreditRequest(body);
    await this.writer.creditNested(account, cents, 'commit');
    return { account, cents };
  }

  /** The same write, exactly once per `Idempotency-Key`: the layer sends it in the claim's transaction. */
  @Post('idempotent/credits')
  @IdempotentHandler()
  async idempotent(@Body() body: unknown) {
    const { account, cents } = toCreditRequest(body);
    await this.writer.credit(account, cents);
    return { account, cents };
  }

  /** For the runner: CPU time and memory, as the bench app's `GET /usage`; `?gc=true` first runs a full garbage collection. */
  @Get('usage')
  usage(@Query('gc') gc?: string): ProcessUsage {
    return processUsage(gc);
  }

  /** For the runner: the queries this process has sent to PostgreSQL so far. */
  @Get('round-trips')
  roundTrips() {
    return { roundTrips: roundTrips() };
  }
}
