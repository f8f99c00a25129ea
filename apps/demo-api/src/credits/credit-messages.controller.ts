import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { IdempotentHandler } from 'nestjs-idempotent-consumer';
import { toCreditRequest } from './credit-request.js';
import { CreditsService } from './credits.service.js';

/**
 * Failed deliveries of a `credit.grant` message before the module dead-letters it. A quorum
 * queue's `x-delivery-limit` must be at least this (see `consumeCredits`), so the module's retry
 * policy, not the broker's limit, ends a failing message.
 */
export const CREDIT_GRANT_MAX_ATTEMPTS = 5;

/** Credits granted through RabbitMQ: the AMQP `messageId` is the key; the module acks and nacks. */
@Controller()
export class CreditMessagesController {
  constructor(private readonly credits: CreditsService) {}

  @EventPattern('credit.grant')
  @IdempotentHandler({ sender: 'credits-queue', maxAttempts: CREDIT_GRANT_MAX_ATTEMPTS })
  async grant(@Payload() payload: unknown): Promise<void> {
    const { account, cents } = toCreditRequest(payload);
    await this.credits.grant(account, cents);
  }
}
