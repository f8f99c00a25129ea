import { postgresErrorCode } from './postgres-errors.js';

describe('postgresErrorCode', () => {
  const pgError = Object.assign(new Error('deadlock detected'), { code: '40P01' });

  it("reads pg's SQLSTATE however a layer wrapped the error: as is, TypeORM's driverError, Drizzle's cause", () => {
    expect(postgresErrorCode(pgError)).toBe('40P01');
    expect(postgresErrorCode(Object.assign(new Error('QueryFailedError'), { driverError: pgError }))).toBe('40P01');
    expect(postgresErrorCode(new Error('Failed query: INSERT ...', { cause: pgError }))).toBe('40P01');
  });

  it("reads the SQLSTATE in Prisma's driver adapter error, not Prisma's own code", () => {
    const adapterError = Object.assign(new Error('DriverAdapterError'), { cause: { originalCode: '40P01', originalMessage: 'deadlock detected', kind: 'postgres' } });
    const prismaError = Object.assign(new Error('Raw query failed. Code: `40P01`.'), { code: 'P2010', clientVersion: '7.10.1', meta: { driverAdapterError: adapterError } });
    expect(postgresErrorCode(prismaError)).toBe('40P01');
    expect(postgresErrorCode(Object.assign(new Error('Unique constraint failed'), { code: 'P2002', clientVersion: '7.10.1' }))).toBeUndefined();
  });

  it("answers a socket's error code, and undefined for an error without a code", () => {
    expect(postgresErrorCode(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).toBe('ECONNRESET');
    expect(postgresErrorCode(new Error('no code', { cause: new Error('nor here') }))).toBeUndefined();
  });
});
