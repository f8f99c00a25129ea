import { MARIADB_LOCK_WAIT_TIMEOUT, mariaDbErrno } from './mariadb-errors.js';

describe('mariaDbErrno', () => {
  const mysql2Error = Object.assign(new Error('Lock wait timeout exceeded; try restarting transaction'), { errno: MARIADB_LOCK_WAIT_TIMEOUT, code: 'ER_LOCK_WAIT_TIMEOUT' });

  it("reads mysql2's errno however a layer wrapped the error: as is, TypeORM's driverError, Drizzle's cause", () => {
    expect(mariaDbErrno(mysql2Error)).toBe(1205);
    expect(mariaDbErrno(Object.assign(new Error('QueryFailedError'), { driverError: mysql2Error }))).toBe(1205);
    expect(mariaDbErrno(new Error('Failed query: SET STATEMENT ...', { cause: mysql2Error }))).toBe(1205);
  });

  it("reads the number in Prisma's driver adapter error (`meta.driverAdapterError.cause.originalCode`, as text)", () => {
    const adapterError = Object.assign(new Error('DriverAdapterError'), { cause: { originalCode: '1062', originalMessage: "Duplicate entry 'k' for key 'PRIMARY'", kind: 'UniqueConstraintViolation' } });
    const prismaError = Object.assign(new Error('Raw query failed. Code: `1062`.'), { code: 'P2010', meta: { driverAdapterError: adapterError } });
    expect(mariaDbErrno(prismaError)).toBe(1062);
  });

  it('answers undefined for an error without one', () => {
    expect(mariaDbErrno(new Error('not a database error', { cause: new Error('nor this') }))).toBeUndefined();
    expect(mariaDbErrno('a string')).toBeUndefined();
  });
});
