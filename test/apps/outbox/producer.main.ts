import 'reflect-metadata';
import { Body, Controller, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IdempotencyContext, IdempotentHandler, Outbox } from 'nestjs-idempotent-consumer';
import { ADDRESS, CREDIT_PATTERN, env, type GrantedCredit, outboxOptions, placeholders, storeModules, TRANSPORT } from './outbox-app.js';

/**
 * The producer of the outbox suite, as a process of its own so that a test can SIGKILL it:
 * `POST /credits` (keyed by its Idempotency-Key header) writes a credit to the `credits` table and
 * announces it through the outbox in the same transaction; `fail: true` throws after both, so the
 * request fails and neither may ever be seen. RELAY=none leaves the sending to a relay process.
 */
interface CreditRequest {
  readonly account: string;
  readonly cents: number;
  readonly fail?: boolean;
}

@Controller()
class CreditsController {
  constructor(
    private readonly idempotency: IdempotencyContext,
    private readonly outbox: Outbox,
  ) {}

  @Post('credits')
  @IdempotentHandler()
  async grant(@Body() body: CreditRequest) {
    const [{ id }] = (await this.idempotency.manager.query(placeholders('INSERT INTO credits (account, cents) VALUES ($1, $2) RETURNING id'), [body.account, body.cents])) as {
      id: string;
    }[];
    const payload: GrantedCredit = { account: body.account, cents: body.cents, creditId: String(id) };
    const messageId = await this.outbox.publish({
      to: TRANSPORT,
      address: ADDRESS,
      ...(TRANSPORT === 'rabbitmq' ? { pattern: CREDIT_PATTERN } : {}),
      payload,
    });
    if (body.fail) {
      throw new Error(`credit ${id} refused after it was written and announced`);
    }
    return { creditId: String(id), messageId };
  }
}

@Module({ controllers: [CreditsController] })
class CreditsModule {}

const app = await NestFactory.create(
  { module: class ProducerModule {}, imports: [...storeModules(await outboxOptions(env.RELAY !== 'none')), CreditsModule] },
  { logger: ['log', 'warn', 'error'] },
);
app.enableShutdownHooks();
await app.listen(Number(env.PORT), '127.0.0.1');
