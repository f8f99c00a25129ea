import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import { IdempotencyClaimTransactionError } from '../errors/idempotency-claim-transaction.error.js';
import { IdempotencyError } from '../errors/idempotency.error.js';
import { IdempotencyInFlightError } from '../errors/idempotency-in-flight.error.js';
import { IdempotencyKeyReusedError } from '../errors/idempotency-key-reused.error.js';
import { IdempotencyKeyError } from '../errors/idempotency-key.error.js';
import { IdempotencyLeaseLostError } from '../errors/idempotency-lease-lost.error.js';
import { IdempotencyRecordUnreadableError } from '../errors/idempotency-record-unreadable.error.js';
import { IdempotencyResponseTooLargeError } from '../errors/idempotency-response-too-large.error.js';
import { IdempotencyTransactionAbortedError } from '../errors/idempotency-transaction-aborted.error.js';
import { IdempotencyTransientError } from '../errors/idempotency-transient.error.js';
import { IdempotencyUnavailableError } from '../errors/idempotency-unavailable.error.js';
import { problemAnswer } from './http/problem-details.js';

/**
 * Answers the library's delivery errors with an RFC 9457 `application/problem+json` body; 409 and
 * 503 carry `Retry-After`. A message handler's requester gets `{ status: 'error', name, message }`.
 * Applied by `@IdempotentHandler()`; other errors pass on to the application's filters untouched.
 */
@Catch(
  IdempotencyKeyError,
  IdempotencyKeyReusedError,
  IdempotencyInFlightError,
  IdempotencyTransientError,
  IdempotencyUnavailableError,
  IdempotencyLeaseLostError,
  IdempotencyTransactionAbortedError,
  IdempotencyClaimTransactionError,
  IdempotencyResponseTooLargeError,
  IdempotencyRecordUnreadableError,
)
export class IdempotencyErrorFilter implements ExceptionFilter<IdempotencyError> {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: IdempotencyError, host: ArgumentsHost): void | Observable<never> {
    if (host.getType() !== 'http') {
      return throwError(() => ({ status: 'error', name: error.name, message: error.message }));
    }
    const answer = problemAnswer(error);
    const adapter = this.adapterHost.httpAdapter;
    const response = host.switchToHttp().getResponse();
    for (const [name, value] of Object.entries(answer.headers)) {
      adapter.setHeader(response, name, value);
    }
    adapter.reply(response, answer.body, answer.status);
  }
}
