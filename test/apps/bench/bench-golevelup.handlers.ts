import { RabbitMQModule, RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { type DynamicModule, Injectable, Module } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';
import type { DataSource } from 'typeorm';
import { toCreditRequest } from '../../../apps/demo-api/src/credits/credit-request.js';
import { PREFETCH } from './bench-app.module.js';
import type { TransportArm } from './consumer-commands.js';
import { grantCredit } from './credit-grant.js';

/** The credit handler as a `@RabbitSubscribe` of `@golevelup/nestjs-rabbitmq`, without the module: its own transaction; golevelup acks once it resolves. */
@Injectable()
export class PlainGolevelupHandler {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  @RabbitSubscribe({ name: 'plain' })
  async plain(payload: unknown): Promise<void> {
    const { account, cents } = toCreditRequest(payload);
    await this.dataSource.transaction((manager) => grantCredit(manager, account, cents));
  }
}

/** The same credit, exactly once per AMQP `messageId`: golevelup acks after the claim's commit. */
@Injectable()
export class IdempotentGolevelupHandler {
  constructor(private readonly idempotency: IdempotencyContext) {}

  @RabbitSubscribe({ name: 'idempotent' })
  @IdempotentHandler()
  async idempotent(payload: unknown): Promise<void> {
    const { account, cents } = toCreditRequest(payload);
    await grantCredit(this.idempotency.manager, account, cents);
  }
}

@Module({})
export class BenchGolevelupModule {
  /**
   * The handler of `variant` only, subscribed (by its name) to `queue` on the broker at `uri` with
   * case 4's prefetch. The runner declares the queue; golevelup only checks that it is there.
   */
  static register(variant: TransportArm, uri: string, queue: string): DynamicModule {
    return {
      module: BenchGolevelupModule,
      imports: [
        RabbitMQModule.forRoot({
          uri,
          prefetchCount: PREFETCH,
          connectionInitOptions: { wait: true },
          handlers: { [variant]: { queue, createQueueIfNotExists: false } },
        }),
      ],
      providers: [variant === 'plain' ? PlainGolevelupHandler : IdempotentGolevelupHandler],
    };
  }
}
