import { Controller, type DynamicModule, Module } from '@nestjs/common';
import { Ctx, EventPattern, type KafkaContext, Payload } from '@nestjs/microservices';
import { InjectDataSource } from '@nestjs/typeorm';
import { IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';
import type { DataSource } from 'typeorm';
import type { TransportArm } from './consumer-commands.js';
import { toCreditRequest } from '../../../apps/demo-api/src/credits/credit-request.js';
import { grantCredit } from './credit-grant.js';

/** The topic of each variant's credits, on the bench's own broker (the case starts it). */
export const KAFKA_TOPICS: Record<TransportArm, string> = {
  plain: 'idem-bench.kafka.plain',
  idempotent: 'idem-bench.kafka.idempotent',
};

/** Partitions of each topic, handled at once by the consumer, one record at a time each. */
export const KAFKA_PARTITIONS = 4;

/**
 * The credit handler on a topic of Nest's Kafka server (`run: { autoCommit: false }`), without the
 * module: its own transaction, then the record's offset committed once that has committed, as the
 * module commits it after the claim's.
 */
@Controller()
export class PlainKafkaController {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  // `<string>` picks the untyped overload, whose handler may take the context after the payload.
  @EventPattern<string>(KAFKA_TOPICS.plain)
  async plain(@Payload() payload: unknown, @Ctx() context: KafkaContext): Promise<void> {
    const { account, cents } = toCreditRequest(payload);
    await this.dataSource.transaction((manager) => grantCredit(manager, account, cents));
    const next = String(BigInt(context.getMessage().offset) + 1n);
    await context.getConsumer().commitOffsets([{ topic: context.getTopic(), partition: context.getPartition(), offset: next }]);
  }
}

/** The same credit, exactly once per `Idempotency-Key` header: the module commits the offset after its commit. */
@Controller()
export class IdempotentKafkaController {
  constructor(private readonly idempotency: IdempotencyContext) {}

  @EventPattern(KAFKA_TOPICS.idempotent)
  @IdempotentHandler()
  async idempotent(@Payload() payload: unknown): Promise<void> {
    const { account, cents } = toCreditRequest(payload);
    await grantCredit(this.idempotency.manager, account, cents);
  }
}

@Module({})
export class BenchKafkaModule {
  /** The controller of `variant` only: a consumer process subscribes to its own topic alone. */
  static register(variant: TransportArm): DynamicModule {
    return { module: BenchKafkaModule, controllers: [variant === 'plain' ? PlainKafkaController : IdempotentKafkaController] };
  }
}
