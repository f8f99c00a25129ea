import { QueryFailedError, QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { classify } from '../errors/delivery-error-classes.js';
import { IdempotencyClaimTransactionError, IdempotencyCommitRefusedError, IdempotencyUnavailableError } from '../errors/idempotency.errors.js';
import { commitRefusedError, translateDatabaseError } from './claim-errors.js';

const request = { consumer: 'payments', key: 'm-1' };
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('translateDatabaseError: a connection lost before the commit', () => {
  it.each([
    ['pg_terminate_backend() (57P01)', new QueryFailedError('SELECT 1', [], pgError('57P01', 'terminating connection due to administrator command'))],
    ['a connection exception (08006)', pgError('08006', 'connection failure')],
    ["node-postgres's cut connection", new Error('Connection terminated unexpectedly')],
    ['a socket the network reset (ECONNRESET)', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104, syscall: 'read' })],
    ["TypeORM's released query runner", new QueryRunnerAlreadyReleasedError()],
    ["TypeORM's entity manager on a released query runner", new QueryRunnerProviderAlreadyReleasedError()],
  ])('%s is said as such: nothing committed, a retry processes the message anew', (_, error) => {
    const translated = translateDatabaseError(error, request);
    expect(translated).toBeInstanceOf(IdempotencyUnavailableError);
    expect((translated as Error).message).toMatch(/^The database connection of the claim of 'm-1' \(payments\) was lost before the claim committed \(.+\): .*nothing was committed/);
    expect((translated as Error).cause).toBe(error);
  });

  it("answers the module's own refusal that TypeORM wrapped in a QueryFailedError (a statement refused through the driver's callback) as itself", () => {
    const refusal = new IdempotencyClaimTransactionError('refused', 'payments', 'm-1');
    expect(translateDatabaseError(new QueryFailedError('SET TRANSACTION ISOLATION LEVEL SERIALIZABLE', [], refusal), request)).toBe(refusal);
  });

  it('leaves other errors as they are', () => {
    const error = pgError('23505', 'duplicate key value violates unique constraint');
    expect(translateDatabaseError(error, request)).toBe(error);
  });
});

describe('commitRefusedError: a COMMIT a constraint refused', () => {
  it('is a definite failure naming what PostgreSQL said, for any constraint (class 23)', () => {
    const error = Object.assign(pgError('23505', 'duplicate key value violates unique constraint "outbox_messages_id_key"'), { detail: 'Key (id)=(grant-1) already exists.' });
    const refused = commitRefusedError(error, request);
    expect(refused).toBeInstanceOf(IdempotencyCommitRefusedError);
    expect(refused).toMatchObject({ consumer: 'payments', key: 'm-1', reason: 'duplicate key value violates unique constraint "outbox_messages_id_key": Key (id)=(grant-1) already exists.', cause: error });
    expect(classify(refused)).toMatchObject({ status: 500, slug: 'commit-refused', retryable: false });
    expect(commitRefusedError(new QueryFailedError('COMMIT', [], pgError('23503', 'violates foreign key constraint')), request)).toBeInstanceOf(IdempotencyCommitRefusedError);
  });

  it('is nothing for another error: a serialization failure, a lost connection', () => {
    expect(commitRefusedError(pgError('40001', 'could not serialize access'), request)).toBeUndefined();
    expect(commitRefusedError(new Error('Connection terminated unexpectedly'), request)).toBeUndefined();
  });
});
