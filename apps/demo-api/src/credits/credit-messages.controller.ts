import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { IdempotentHandler } from 'nestjs-idempotent-consumer';
import { toCreditRequest } from './credit-request.js';
import { CreditsService } from './credits.service.js';

/** Credits granted through RabbitMQ: the AMQP `messageId` is the key; the module acks and nacks. */
@Controller()
export class CreditMessagesController {
  constructor(private readonly credits: CreditsService) {}

  @EventPattern('credit.grant')
  @IdempotentHandler({ sender: 'credits-queue', maxAttempts: 5 })
  async grant(@Payload() payload: unknown): Promise<void> {
    const { account, cents } = toCreditRequest(payload);
    await this.credits.grant(account, cents);
  }
}
