import { MARIADB_LOCK_WAIT_TIMEOUT, mariaDbErrno } from './mariadb-errors.js';

describe('mariaDbErrno', () => {
  const mysql2Error = Object.assign(new Error('Lock wait timeout exceeded; try restarting transaction'), { errno: MARIADB_LOCK_WAIT_TIMEOUT, code: 'ER_LOCK_WAIT_TIMEOUT' });

  it("reads mysql2's errno however a layer wrapped the error: as is, TypeORM's driverError, Drizzle's cause", () => {
    expect(mariaDbErrno(mysql2Error)).toBe(1205);
    expect(mariaDbErrno(Object.assign(new Error('QueryFailedError'), { driverError: mysql2Error }))).toBe(1205);
    expect(mariaDbErrno(new Error('Failed query: SET STATEMENT ...', { cause: mysql2Error }))).toBe(1205);
  });

  it('answers undefined for an error without one', () => {
    expect(mariaDbErrno(new Error('not a database error', { cause: new Error('nor this') }))).toBeUndefined();
    expect(mariaDbErrno('a string')).toBeUndefined();
  });
});
