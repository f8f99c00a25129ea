import type { CallHandler, ExecutionContext } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';

/**
 * Stands in for the HTTP and message deliveries of `IdempotencyInterceptor` under
 * `IdempotencyTestingModule`: runs the handler once per call, claims nothing, replays nothing.
 * @internal
 */
export class PassThroughDelivery {
  handle(_context: ExecutionContext, next: CallHandler): Promise<unknown> {
    return lastValueFrom(next.handle(), { defaultValue: undefined });
  }
}
