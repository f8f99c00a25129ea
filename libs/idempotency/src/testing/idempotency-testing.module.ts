import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { IdempotencyContext } from '../context/idempotency.context.js';
import { HttpDelivery } from '../transports/http/http-delivery.js';
import { MessageDelivery } from '../transports/message-delivery.js';
import type { IdempotencyTestingOptions } from './idempotency-testing.options.js';
import { PassThroughDelivery } from './pass-through.delivery.js';
import { PassThroughProviderCalls } from './pass-through.provider-calls.js';
import { TestingIdempotencyContext } from './testing-idempotency.context.js';
import { Outbox } from '../outbox/outbox.js';
import { TestingOutbox } from './testing-outbox.js';

/**
 * Stands in for `IdempotencyModule` in unit tests of controllers, with no database: an
 * `@IdempotentHandler()` method (HTTP route or `@EventPattern` / `@MessagePattern` handler) runs
 * once per call, whatever its key, and nothing is claimed, recorded or replayed.
 * `IdempotencyContext` is active everywhere, also in a handler called directly, and answers the
 * options' fixed values; `manager` is the one given, or throws `IdempotencyContextError`. `Outbox`
 * is a `TestingOutbox`, which keeps what is published in `published` and sends nothing.
 * Global: import it once in the testing module.
 *
 * @example
 * ```ts
 * const moduleRef = await Test.createTestingModule({
 *   imports: [IdempotencyTestingModule.forRoot()],
 *   controllers: [PaymentsController],
 *   providers: [{ provide: PaymentsService, useValue: fakePayments }],
 * }).compile();
 * ```
 */
@Module({})
export class IdempotencyTestingModule {
  /** The module, with what `IdempotencyContext` answers. */
  static forRoot(options: IdempotencyTestingOptions = {}): DynamicModule {
    const delivery = new PassThroughDelivery();
    return {
      module: IdempotencyTestingModule,
      global: true,
      imports: [DiscoveryModule],
      providers: [
        PassThroughProviderCalls,
        { provide: IdempotencyContext, useValue: new TestingIdempotencyContext(options) },
        { provide: Outbox, useFactory: () => new TestingOutbox() },
        // What @IdempotentHandler()'s interceptor needs, in place of the claiming deliveries.
        { provide: HttpDelivery, useValue: delivery },
        { provide: MessageDelivery, useValue: delivery },
      ],
      exports: [IdempotencyContext, Outbox, HttpDelivery, MessageDelivery],
    };
  }
}
