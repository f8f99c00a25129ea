import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload, RmqContext } from '@nestjs/microservices';
import { InjectDataSource } from '@nestjs/typeorm';
import { IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';
import type { Channel, Message } from 'amqplib';
import type { DataSource } from 'typeorm';
import { toCreditRequest } from '../../../apps/demo-api/src/credits/credit-request.js';
import { grantCredit } from './credit-grant.js';

/** The variants of the RabbitMQ consumer, and the pattern of each one's messages. */
export type ConsumerArm = 'plain' | 'idempotent' | 'lease-postgres' | 'lease-redis';
export const CREDIT_PATTERNS: Record<ConsumerArm, string> = {
  plain: 'bench.credit.plain',
  idempotent: 'bench.credit.idempotent',
  'lease-postgres': 'bench.credit.lease-postgres',
  'lease-redis': 'bench.credit.lease-redis',
};

/**
 * The bench controller's credit handler as RabbitMQ consumers (`noAck: false`): as a plain
 * transaction that acks its message itself, and as idempotent handlers whose message the module
 * acks (transactional, and in lease mode on each store). All run the very same `grantCredit` statements.
 */
@Controller()
export class BenchMessagesController {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly idempotency: IdempotencyContext,
  ) {}

  /** The handler without the module: its own transaction, then the ack once it has committed. */
  // `<string>` picks the untyped overload, whose handler may take the `RmqContext` after the payload.
  @EventPattern<string>(CREDIT_PATTERNS.plain)
  async plain(@Payload() payload: unknown, @Ctx() context: RmqContext): Promise<void> {
    await this.grantInOwnTransaction(payload);
    (context.getChannelRef() as Channel).ack(context.getMessage() as Message);
  }

  /** The same handler, exactly once per AMQP `messageId`. */
  @EventPattern(CREDIT_PATTERNS.idempotent)
  @IdempotentHandler()
  async idempotent(@Payload() payload: unknown): Promise<void> {
    const { account, cents } = toCreditRequest(payload);
    await grantCredit(this.idempotency.manager, account, cents);
  }

  /** The handler in lease mode, its claim in PostgreSQL: the work runs in its own transaction. */
  @EventPattern(CREDIT_PATTERNS['lease-postgres'])
  @IdempotentHandler({ mode: 'lease', store: 'postgres' })
  async leasePostgres(@Payload() payload: unknown): Promise<void> {
    await this.grantInOwnTransaction(payload);
  }

  /** The handler in lease mode, its claim in Redis. */
  @EventPattern(CREDIT_PATTERNS['lease-redis'])
  @IdempotentHandler({ mode: 'lease', store: 'redis' })
  async leaseRedis(@Payload() payload: unknown): Promise<void> {
    await this.grantInOwnTransaction(payload);
  }

  private async grantInOwnTransaction(payload: unknown): Promise<void> {
    const { account, cents } = toCreditRequest(payload);
    await this.dataSource.transaction((manager) => grantCredit(manager, account, cents));
  }
}
