import { type CallHandler, type ExecutionContext, Inject, Injectable, type NestInterceptor } from '@nestjs/common';
import { from, type Observable } from 'rxjs';
import { IdempotencyUnsupportedHandlerError } from '../errors/idempotency-unsupported-handler.error.js';
import { messages } from '../idempotency.messages.js';
import { HttpDelivery } from './http/http-delivery.js';
import { RpcDelivery } from './rpc/rpc-delivery.js';

/**
 * One transport's idempotent path, as the interceptor calls it. The interceptor's constructor is
 * typed with it rather than with the deliveries, so its declarations name no optional package
 * (the message delivery's types name `@nestjs/microservices`).
 * @internal
 */
export interface IdempotentPath {
  handle(context: ExecutionContext, next: CallHandler): Promise<unknown>;
}

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
    @Inject(HttpDelivery) private readonly http: IdempotentPath,
    @Inject(RpcDelivery) private readonly rpc: IdempotentPath,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const type = context.getType<string>();
    if (type === 'http') {
      return from(this.http.handle(context, next));
    }
    if (type === 'rpc') {
      return from(this.rpc.handle(context, next));
    }
    const handler = `${context.getClass().name}.${context.getHandler().name}`;
    throw new IdempotencyUnsupportedHandlerError(messages.unsupportedContext(handler, type), handler);
  }
}
