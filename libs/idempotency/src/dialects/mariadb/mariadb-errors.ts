/** MariaDB's error numbers (`errno` of a mysql2 error) the store reacts to. */
export const MARIADB_DUPLICATE_ENTRY = 1062;
export const MARIADB_LOCK_WAIT_TIMEOUT = 1205;
export const MARIADB_DEADLOCK = 1213;

/** The error number of a mysql2 error, also when TypeORM wrapped it; undefined for any other error. */
export function mariaDbErrno(error: unknown): number | undefined {
  const candidate = error as { errno?: unknown; driverError?: { errno?: unknown } } | undefined;
  const errno = candidate?.driverError?.errno ?? candidate?.errno;
  return typeof errno === 'number' ? errno : undefined;
}
