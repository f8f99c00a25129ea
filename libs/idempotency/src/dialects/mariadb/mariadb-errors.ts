import { wrappedErrors } from '../reported-error.js';

/** MariaDB's error numbers (`errno` of a mysql2 error) the store reacts to. */
export const MARIADB_DUPLICATE_ENTRY = 1062;
export const MARIADB_LOCK_WAIT_TIMEOUT = 1205;
export const MARIADB_DEADLOCK = 1213;

/**
 * The error number of a MariaDB driver's error (mysql2's or the `mariadb` connector's `errno`), also
 * when a layer wrapped it (`wrappedErrors()`: TypeORM's `driverError`, Drizzle's `cause`, Prisma's
 * driver adapter error, whose `originalCode` is the number as text); undefined for any other error.
 */
export function mariaDbErrno(error: unknown): number | undefined {
  for (const { errno, originalCode } of wrappedErrors(error)) {
    if (typeof errno === 'number') {
      return errno;
    }
    if (typeof originalCode === 'string' && /^\d+$/.test(originalCode)) {
      return Number(originalCode);
    }
  }
  return undefined;
}
