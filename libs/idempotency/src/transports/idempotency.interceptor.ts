import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { from, type Observable } from 'rxjs';
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
    return from(context.getType() === 'rpc' ? this.rpc.handle(context, next) : this.http.handle(context, next));
  }
}
