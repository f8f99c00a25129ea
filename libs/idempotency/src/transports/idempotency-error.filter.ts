import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import { CLASSIFIED_ERRORS } from '../errors/delivery-error-classes.js';
import type { IdempotencyError } from '../errors/idempotency.error.js';
import { problemAnswer } from './http/problem-details.js';

/**
 * Answers the library's delivery errors with an RFC 9457 `application/problem+json` body; 409 and
 * 503 carry `Retry-After`. A message handler's requester gets `{ status: 'error', name, message }`.
 * Applied by `@IdempotentHandler()`; other errors pass on to the application's filters untouched.
 */
@Catch(...CLASSIFIED_ERRORS)
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
