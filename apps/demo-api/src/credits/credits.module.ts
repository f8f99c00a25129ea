import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Account } from './account.entity.js';
import { CreditMessagesController } from './credit-messages.controller.js';
import { CreditsController } from './credits.controller.js';
import { CreditsService } from './credits.service.js';
import { LedgerEntry } from './ledger-entry.entity.js';
import { PaymentWebhooksController } from './payment-webhooks.controller.js';

@Module({
  imports: [TypeOrmModule.forFeature([Account, LedgerEntry])],
  controllers: [CreditsController, PaymentWebhooksController, CreditMessagesController],
  providers: [CreditsService],
  exports: [CreditsService],
})
export class CreditsModule {}
