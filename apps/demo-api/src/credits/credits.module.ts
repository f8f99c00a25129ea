import { Module } from '@nestjs/common';
import { CreditsController } from './credits.controller.js';
import { CreditsService } from './credits.service.js';
import { PaymentWebhooksController } from './payment-webhooks.controller.js';

@Module({
  controllers: [CreditsController, PaymentWebhooksController],
  providers: [CreditsService],
  exports: [CreditsService],
})
export class CreditsModule {}
