import { type CallHandler, Controller, type ExecutionContext, Get, Logger, Module, type NestInterceptor, UseInterceptors } from '@nestjs/common';
import { Ctx, EventPattern, type KafkaContext, MessagePattern, Payload } from '@nestjs/microservices';
import { randomUUID } from 'node:crypto';
import { IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';

/** The topics of the Kafka suite; each test has a broker of its own, so the names need no run of their own. */
export const KAFKA_TOPICS = {
  credit: 'credit',
  poison: 'poison',
  position: 'position',
  quote: 'quote',
} as const;

/** What a test publishes. */
interface Credit {
  readonly id: string;
}

/** Logs each record Nest hands to a handler as `received <topic>/<partition>/<offset>`, before the module's interceptor sees it. */
class ReceivedRecords implements NestInterceptor {
  private readonly logger = new Logger('KafkaFixture');

  intercept(context: ExecutionContext, next: CallHandler) {
    const kafka = context.switchToRpc().getContext<KafkaContext>();
    this.logger.log(`received ${kafka.getTopic()}/${kafka.getPartition()}/${kafka.getMessage().offset}`);
    return next.handle();
  }
}

/** `@EventPattern` handlers of Kafka topics, and one `@MessagePattern`, each writing one effect row in the claim's transaction. */
@Controller()
@UseInterceptors(ReceivedRecords)
export class KafkaFixtureController {
  private readonly logger = new Logger('KafkaFixture');

  constructor(private readonly idempotency: IdempotencyContext) {}

  /** Readiness, for the test that starts the process. */
  @Get('ping')
  ping() {
    return 'pong';
  }

  /** Keyed by the Idempotency-Key header (the default). */
  @EventPattern(KAFKA_TOPICS.credit)
  @IdempotentHandler()
  credit(@Payload() payload: Credit) {
    this.logger.log(`credit ${payload.id} entered`);
    return this.recordEffect('credit', payload.id);
  }

  /** Keyed by the record's position, for producers that set no key: a copy the producer sent again is a new record. */
  @EventPattern(KAFKA_TOPICS.position)
  @IdempotentHandler({
    key: (context) => {
      const kafka = context.switchToRpc().getContext<KafkaContext>();
      return `${kafka.getTopic()}/${kafka.getPartition()}/${kafka.getMessage().offset}`;
    },
  })
  position(@Payload() payload: Credit) {
    return this.recordEffect('position', payload.id);
  }

  /** Request-reply: answers a quote made up at the first delivery, which a duplicate must get again as it was. */
  @MessagePattern(KAFKA_TOPICS.quote)
  @IdempotentHandler()
  async quote(@Payload() payload: Credit) {
    await this.recordEffect('quote', payload.id);
    return { id: payload.id, quote: randomUUID() };
  }

  /** Writes its effect, then always throws. */
  @EventPattern(KAFKA_TOPICS.poison)
  @IdempotentHandler({ maxAttempts: 3, retryDelay: '100ms' })
  async poison(@Payload() payload: Credit, @Ctx() context: unknown) {
    await this.recordEffect('poison', payload.id);
    this.logger.log(`run ${payload.id} at offset ${(context as KafkaContext).getMessage().offset}`);
    throw new Error('poison: this message can never be processed');
  }

  private async recordEffect(handler: string, key: string): Promise<void> {
    await this.idempotency.manager.query(`INSERT INTO effects (handler, key) VALUES ($1, $2)`, [handler, key]);
  }
}

@Module({ controllers: [KafkaFixtureController] })
export class KafkaFixtureModule {}
