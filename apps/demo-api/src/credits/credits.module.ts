import { Module } from '@nestjs/common';
import { CreditMessagesController } from './credit-messages.controller.js';
import { CreditsController } from './credits.controller.js';
import { CreditsService } from './credits.service.js';
import { PaymentWebhooksController } from './payment-webhooks.controller.js';

@Module({
  controllers: [CreditsController, PaymentWebhooksController, CreditMessagesController],
  providers: [CreditsService],
  exports: [CreditsService],
})
export class CreditsModule {}
