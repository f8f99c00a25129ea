import { Body, Controller, Post } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { toCreditRequest } from '../../../apps/demo-api/src/credits/credit-request.js';
import { grantCredit } from './credit-grant.js';
import { nodeIdempotency } from './node-idempotency.js';

/**
 * The bench's plain credit handler (`DataSource.transaction` around `grantCredit`) under the
 * peer's `@Idempotent()`, as its README shows it: the peer's claim and record are in Redis,
 * outside the handler's transaction.
 */
@Controller()
export class PeerController {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The credit once per `Idempotency-Key`, as far as `@node-idempotency/nestjs` sees to it. */
  @Post('peer/credits')
  @nodeIdempotency.Idempotent()
  async peer(@Body() body: unknown) {
    const { account, cents } = toCreditRequest(body);
    return { account, cents, balance: await this.dataSource.transaction((manager) => grantCredit(manager, account, cents)) };
  }
}
