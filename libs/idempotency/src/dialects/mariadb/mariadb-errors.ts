import { wrappedErrors } from '../reported-error.js';

/** MariaDB's error numbers (`errno` of a mysql2 error) the store reacts to. */
export const MARIADB_DUPLICATE_ENTRY = 1062;
export const MARIADB_LOCK_WAIT_TIMEOUT = 1205;
export const MARIADB_DEADLOCK = 1213;

/** The error number of a mysql2 error, also when a layer wrapped it (`wrappedErrors()`: TypeORM's `driverError`, Drizzle's `cause`); undefined for any other error. */
export function mariaDbErrno(error: unknown): number | undefined {
  for (const { errno } of wrappedErrors(error)) {
    if (typeof errno === 'number') {
      return errno;
    }
  }
  return undefined;
}
