import { type ArgumentsHost, Catch, type ExceptionFilter, HttpStatus } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import { IdempotencyError } from '../errors/idempotency.error.js';
import { IdempotencyInFlightError } from '../errors/idempotency-in-flight.error.js';
import { IdempotencyKeyReusedError } from '../errors/idempotency-key-reused.error.js';
import { IdempotencyKeyError } from '../errors/idempotency-key.error.js';
import { IdempotencyTransientError } from '../errors/idempotency-transient.error.js';
import { RETRY_AFTER_SECONDS } from '../idempotency.internal-constants.js';

interface ProblemType {
  readonly status: HttpStatus;
  readonly slug: string;
  readonly title: string;
  readonly retryable: boolean;
}

const PROBLEM_TYPES = new Map<abstract new (...args: never[]) => IdempotencyError, ProblemType>([
  [IdempotencyKeyError, { status: HttpStatus.BAD_REQUEST, slug: 'invalid-key', title: 'Invalid idempotency key', retryable: false }],
  [IdempotencyKeyReusedError, { status: HttpStatus.UNPROCESSABLE_ENTITY, slug: 'key-reused', title: 'Idempotency key reused', retryable: false }],
  [IdempotencyInFlightError, { status: HttpStatus.CONFLICT, slug: 'in-flight', title: 'Request in flight', retryable: true }],
  [IdempotencyTransientError, { status: HttpStatus.SERVICE_UNAVAILABLE, slug: 'transient', title: 'Transaction aborted', retryable: true }],
]);

/**
 * Answers the library's request errors with an RFC 9457 `application/problem+json` body; 409 and
 * 503 carry `Retry-After`. A message handler's requester gets `{ status: 'error', name, message }`.
 * Applied by `@IdempotentHandler()`; other errors pass on untouched.
 */
@Catch(IdempotencyKeyError, IdempotencyKeyReusedError, IdempotencyInFlightError, IdempotencyTransientError)
export class IdempotencyErrorFilter implements ExceptionFilter<IdempotencyError> {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: IdempotencyError, host: ArgumentsHost): void | Observable<never> {
    if (host.getType() !== 'http') {
      return throwError(() => ({ status: 'error', name: error.name, message: error.message }));
    }
    const problem = PROBLEM_TYPES.get(error.constructor as new () => IdempotencyError) as ProblemType;
    const adapter = this.adapterHost.httpAdapter;
    const response = host.switchToHttp().getResponse();
    adapter.setHeader(response, 'Content-Type', 'application/problem+json');
    if (problem.retryable) {
      adapter.setHeader(response, 'Retry-After', String(RETRY_AFTER_SECONDS));
    }
    const body = { type: `urn:idempotency:${problem.slug}`, title: problem.title, status: problem.status, detail: error.message };
    adapter.reply(response, body, problem.status);
  }
}
