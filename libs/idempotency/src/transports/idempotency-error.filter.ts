import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import { classify, CLASSIFIED_ERRORS } from '../errors/delivery-error-classes.js';
import type { IdempotencyError } from '../errors/idempotency.errors.js';
import { asGraphqlError } from './graphql/graphql-errors.js';
import { problemAnswer } from './http/problem-details.js';
import { ReportedFailure } from './reported-failures.js';

/** What Nest's own RPC exception filter answers an error that is not an `RpcException`. */
const UNKNOWN_RPC_ERROR = { status: 'error', message: 'Internal server error' } as const;

/** What Nest's own RPC exception filter answers `error`, without its log line: an `RpcException` (known by its `getError()`) answers its error. */
function nestRpcAnswer(error: Error): object {
  const answer: unknown = (error as { getError?: () => unknown }).getError?.();
  if (answer === undefined) {
    return UNKNOWN_RPC_ERROR;
  }
  return typeof answer === 'object' && answer !== null ? answer : { status: 'error', message: answer };
}

/**
 * Answers the library's delivery errors with an RFC 9457 `application/problem+json` body; 409 and
 * 503 carry `Retry-After`. A GraphQL mutation's error carries the same problem type in its
 * `extensions` (`code`, `type`, `status`, `retryAfter`). A message handler's requester gets
 * `{ status: 'error', code, name, message }`; `code` is the same on every entry (`IDEMPOTENCY_KEY_REUSED`).
 * A failed message the module settled with its broker and logged itself (RabbitMQ, JetStream) is
 * answered as Nest would answer it, without Nest's second log line: the interceptors around the
 * handler still see the error. Applied by `@IdempotentHandler()`; other errors pass on to the
 * application's filters untouched.
 */
@Catch(...CLASSIFIED_ERRORS, ReportedFailure)
export class IdempotencyErrorFilter implements ExceptionFilter<Error> {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: Error, host: ArgumentsHost): void | Error | Observable<never> {
    if (host.getType<string>() === 'graphql') {
      // A resolver's answer that is an error becomes a GraphQL error, with the extensions it carries.
      return asGraphqlError(error as IdempotencyError);
    }
    if (host.getType() !== 'http') {
      const problem = classify(error);
      return throwError(() => (problem ? { status: 'error', code: problem.code, name: error.name, message: error.message } : nestRpcAnswer(error)));
    }
    const answer = problemAnswer(error as IdempotencyError);
    const adapter = this.adapterHost.httpAdapter;
    const response = host.switchToHttp().getResponse();
    for (const [name, value] of Object.entries(answer.headers)) {
      adapter.setHeader(response, name, value);
    }
    adapter.reply(response, answer.body, answer.status);
  }
}
