import { Controller, type DynamicModule, Module } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { InjectDataSource } from '@nestjs/typeorm';
import type { NatsJetStreamContext } from '@nestjs-plugins/nestjs-nats-jetstream-transport';
import { IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';
import { defer, type Observable } from 'rxjs';
import type { DataSource } from 'typeorm';
import type { TransportArm } from './consumer-commands.js';
import { toCreditRequest } from '../../../apps/demo-api/src/credits/credit-request.js';
import { grantCredit } from './credit-grant.js';

/** The subject of each variant's credits, one stream each (see `openBenchJetStream` of `test/support/broker-clients.ts`). */
export const JETSTREAM_SUBJECTS: Record<TransportArm, string> = {
  plain: 'idem-bench.jetstream.plain',
  idempotent: 'idem-bench.jetstream.idempotent',
};

/**
 * The credit handler on a durable JetStream consumer of `@nestjs-plugins/nestjs-nats-jetstream-transport`
 * (`manualAck: true`), without the module: its own transaction, then the ack once that has committed.
 * It returns a cold Observable of that work, not a promise: the plugin awaits a handler's promise
 * before it takes the next message (one message in flight), and subscribes to an Observable without
 * waiting, as it does to what every handler behind an interceptor returns, the idempotent one
 * included. So both arms have up to the consumer's `maxAckPending` messages in flight.
 */
@Controller()
export class PlainJetStreamController {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  // `<string>` picks the untyped overload, whose handler may take the context after the payload.
  @EventPattern<string>(JETSTREAM_SUBJECTS.plain)
  plain(@Payload() payload: unknown, @Ctx() context: NatsJetStreamContext): Observable<void> {
    return defer(async () => {
      const { account, cents } = toCreditRequest(payload);
      await this.dataSource.transaction((manager) => grantCredit(manager, account, cents));
      context.message.ack();
    });
  }
}

/** The same credit, exactly once per `Nats-Msg-Id`: the module acks after its commit. */
@Controller()
export class IdempotentJetStreamController {
  constructor(private readonly idempotency: IdempotencyContext) {}

  @EventPattern(JETSTREAM_SUBJECTS.idempotent)
  @IdempotentHandler()
  async idempotent(@Payload() payload: unknown): Promise<void> {
    const { account, cents } = toCreditRequest(payload);
    await grantCredit(this.idempotency.manager, account, cents);
  }
}

@Module({})
export class BenchJetStreamModule {
  /** The controller of `variant` only: a consumer process subscribes to its own subject alone. */
  static register(variant: TransportArm): DynamicModule {
    return { module: BenchJetStreamModule, controllers: [variant === 'plain' ? PlainJetStreamController : IdempotentJetStreamController] };
  }
}
