import { applyDecorators, SetMetadata, UseFilters, UseInterceptors } from '@nestjs/common';
import { HANDLER_OPTIONS_METADATA } from './idempotency-metadata.constants.js';
import { IdempotencyInterceptor } from '../transports/idempotency.interceptor.js';
import { IdempotencyErrorFilter } from '../transports/idempotency-error.filter.js';
import { wrapForProviderCalls } from '../transports/provider-calls.js';
import type { IdempotentHandlerOptions } from './idempotent-handler.options.js';

/**
 * Makes a handler exactly-once: its message id is claimed in a new database transaction, the
 * handler runs in that same transaction (reach it through `IdempotencyContext.manager`), and the
 * claim, the handler's writes and its response commit together. A duplicate gets the recorded
 * response (`Idempotent-Replayed: true`) without running the handler.
 *
 * @example
 * ```ts
 * @Post('credits')
 * @IdempotentHandler()
 * grant(@Body() body: GrantCredit) {
 *   return this.credits.grant(body.account, body.cents);
 * }
 *
 * @Post('webhooks/payments')
 * @HttpCode(200)
 * @IdempotentHandler({ key: { body: 'id' }, sender: 'payments', retention: '7d' })
 * onPaymentEvent(@Body() event: PaymentEvent) { ... }
 * ```
 */
export function IdempotentHandler(options: IdempotentHandlerOptions = {}): MethodDecorator {
  const viaInterceptor = applyDecorators(SetMetadata(HANDLER_OPTIONS_METADATA, options), UseInterceptors(IdempotencyInterceptor), UseFilters(IdempotencyErrorFilter));
  return (target, methodName, descriptor) => {
    viaInterceptor(target, methodName, descriptor);
    // For the frameworks that call a provider's method without interceptors (BullMQ, SQS).
    (descriptor as PropertyDescriptor).value = wrapForProviderCalls((descriptor as PropertyDescriptor).value, methodName);
    return descriptor;
  };
}
