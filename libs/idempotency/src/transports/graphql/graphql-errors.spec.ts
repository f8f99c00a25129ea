import { IdempotencyInFlightError, IdempotencyKeyError, IdempotencyKeyReusedError, IdempotencyTransientError, IdempotencyUnavailableError } from '../../errors/idempotency.errors.js';
import { problemAnswer } from '../http/problem-details.js';
import { asGraphqlError, graphqlExtensions } from './graphql-errors.js';

describe('graphqlExtensions', () => {
  it.each([
    [new IdempotencyKeyError('no key', 'the Idempotency-Key header'), { code: 'IDEMPOTENCY_INVALID_KEY', type: 'urn:idempotency:invalid-key', status: 400 }],
    [new IdempotencyKeyReusedError('Mutation.pay', 'k'), { code: 'IDEMPOTENCY_KEY_REUSED', type: 'urn:idempotency:key-reused', status: 422 }],
    [new IdempotencyInFlightError('Mutation.pay', 'k'), { code: 'IDEMPOTENCY_IN_FLIGHT', type: 'urn:idempotency:in-flight', status: 409, retryAfter: 1 }],
    [new IdempotencyUnavailableError('down', 'Mutation.pay', 'k'), { code: 'IDEMPOTENCY_UNAVAILABLE', type: 'urn:idempotency:unavailable', status: 503, retryAfter: 1 }],
    [new IdempotencyTransientError('aborted', 'Mutation.pay', 'k'), { code: 'IDEMPOTENCY_TRANSIENT', type: 'urn:idempotency:transient', status: 503, retryAfter: 1 }],
  ])('says %p as HTTP says its problem type', (error, extensions) => {
    expect(graphqlExtensions(error)).toEqual(extensions);
    const problem = problemAnswer(error);
    expect(graphqlExtensions(error)).toMatchObject({ type: problem.body.type, status: problem.status });
    expect(graphqlExtensions(error).retryAfter).toBe(problem.headers['retry-after'] === undefined ? undefined : Number(problem.headers['retry-after']));
  });

  it('keeps the error the module threw, its extensions added', () => {
    const error = new IdempotencyKeyReusedError('Mutation.pay', 'k');
    const answered = asGraphqlError(error);
    expect(answered).toBe(error);
    expect(answered).toBeInstanceOf(IdempotencyKeyReusedError);
    expect(answered.extensions.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });
});
