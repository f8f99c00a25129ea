import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { from, type Observable } from 'rxjs';
import { IdempotencyUnsupportedHandlerError } from '../errors/idempotency-unsupported-handler.error.js';
import { messages } from '../idempotency.messages.js';
import { HttpDelivery } from './http/http-delivery.js';
import { RpcDelivery } from './rpc/rpc-delivery.js';

/** Applied by `@IdempotentHandler()`: hands each delivery to its transport's idempotent path. */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly http: HttpDelivery,
    private readonly rpc: RpcDelivery,
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
