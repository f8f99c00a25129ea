import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { IdempotentHandler } from 'nestjs-idempotent-consumer';
import { toCreditRequest } from './credit-request.js';
import { CreditsService } from './credits.service.js';

/** An event of the payments provider, delivered at least once. */
interface PaymentEvent {
  id: string;
  type: string;
  data?: unknown;
}

@Controller('webhooks')
export class PaymentWebhooksController {
  constructor(private readonly credits: CreditsService) {}

  /** The provider retries for days; the event's own `id` is the key, remembered for 7 days. */
  @Post('payments')
  @HttpCode(200)
  @IdempotentHandler({ key: { body: 'id' }, sender: 'payments', retention: '7d' })
  async onEvent(@Body() event: PaymentEvent) {
    if (event.type !== 'credit.granted') {
      return { id: event.id, handled: false };
    }
    const { account, cents } = toCreditRequest(event.data);
    return { id: event.id, handled: true, account, balance: await this.credits.grant(account, cents) };
  }
}
