import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { from, type Observable } from 'rxjs';
import { HttpDelivery } from './http/http-delivery.js';
import { MessageDelivery } from './message-delivery.js';

/**
 * Applied by `@IdempotentHandler()`: hands each delivery to its transport's idempotent path. Do
 * not apply it yourself; it is exported for tests that replace it, as in
 * `Test.createTestingModule(...).overrideInterceptor(IdempotencyInterceptor).useValue(...)`.
 * It needs `IdempotencyModule` (or `IdempotencyTestingModule` from
 * `nestjs-idempotent-consumer/testing`) in the application.
 *
 * @example
 * ```ts
 * const moduleRef = await Test.createTestingModule({ controllers: [PaymentsController], providers: [...] })
 *   .overrideInterceptor(IdempotencyInterceptor)
 *   .useValue({ intercept: (_context: ExecutionContext, next: CallHandler) => next.handle() })
 *   .compile();
 * ```
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  /** @internal Nest constructs it. */
  constructor(
    private readonly http: HttpDelivery,
    private readonly messages: MessageDelivery,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return context.getType() === 'http' ? from(this.http.handle(context, next)) : this.messages.handle(context, next);
  }
}
