import type { CallHandler, ExecutionContext } from '@nestjs/common';
import type { Observable } from 'rxjs';

/**
 * Stands in for the HTTP and message deliveries of `IdempotencyInterceptor` under
 * `IdempotencyTestingModule`: runs the handler once per call, claims nothing, replays nothing, and
 * answers what the handler emits, as it emits it.
 * @internal
 */
export class PassThroughDelivery {
  handle(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle();
  }
}
