import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import { IdempotentHandler } from 'nestjs-idempotent-consumer';
import { toCreditRequest } from './credit-request.js';
import { CreditsService } from './credits.service.js';

@Controller()
export class CreditsController {
  constructor(private readonly credits: CreditsService) {}

  /** Grants a credit once per `Idempotency-Key`; a retry gets the first answer back. */
  @Post('credits')
  @IdempotentHandler()
  async grant(@Body() body: unknown) {
    const { account, cents } = toCreditRequest(body);
    return { account, cents, balance: await this.credits.grant(account, cents) };
  }

  @Get('accounts/:account')
  async balance(@Param('account') account: string) {
    return { account, balance: await this.credits.balanceOf(account) };
  }
}
