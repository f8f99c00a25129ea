import { Controller, Injectable, Module, type Type } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';
import { env, type GrantedCredit, ON_MARIADB, placeholders } from './outbox-app.js';

/**
 * The consumers' effect: one row in `granted_credits` per handled credit, in the claim's
 * transaction. The table has no unique constraint on the message id: a credit granted twice would
 * show as two rows. HANDLER_DELAY_MS keeps the handler in its transaction (a sleep) after its
 * write, so that a test can kill the process mid-handler.
 */
@Injectable()
export class GrantedCredits {
  constructor(private readonly idempotency: IdempotencyContext) {}

  async grant(credit: GrantedCredit): Promise<void> {
    const manager = this.idempotency.manager;
    await manager.query(placeholders('INSERT INTO granted_credits (message_id, credit_id, account, cents) VALUES ($1, $2, $3, $4)'), [
      this.idempotency.key,
      credit.creditId,
      credit.account,
      credit.cents,
    ]);
    const delayMs = Number(env.HANDLER_DELAY_MS ?? 0);
    if (delayMs > 0) {
      await manager.query(placeholders(ON_MARIADB ? 'SELECT SLEEP($1)' : 'SELECT pg_sleep($1)'), [delayMs / 1000]);
    }
  }
}

/** The downstream service's module, on any transport: one idempotent handler of `pattern` that grants each credit. */
export function creditsConsumerModule(pattern: string): Type {
  @Controller()
  class CreditsConsumer {
    constructor(private readonly credits: GrantedCredits) {}

    @EventPattern<string>(pattern)
    @IdempotentHandler()
    grant(@Payload() credit: GrantedCredit) {
      return this.credits.grant(credit);
    }
  }

  @Module({ controllers: [CreditsConsumer], providers: [GrantedCredits] })
  class ConsumerModule {}
  return ConsumerModule;
}
