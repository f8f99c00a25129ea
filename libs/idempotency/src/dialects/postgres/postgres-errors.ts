import { wrappedErrors } from '../reported-error.js';

/** The SQLSTATE a claim's INSERT answers when it waited for a twin's row past its lock timeout. */
export const PG_LOCK_NOT_AVAILABLE = '55P03';

/**
 * The SQLSTATE of a pg error (or a socket's error code), also when a layer wrapped it
 * (`wrappedErrors()`: TypeORM's `driverError`, Drizzle's `cause`, Prisma's driver adapter error,
 * whose `originalCode` is the SQLSTATE; the `code` of Prisma's own error, `P2010` say, is Prisma's).
 */
export function postgresErrorCode(error: unknown): string | undefined {
  for (const candidate of wrappedErrors(error)) {
    const { code, originalCode, clientVersion } = candidate as { code?: unknown; originalCode?: unknown; clientVersion?: unknown };
    if (typeof originalCode === 'string') {
      return originalCode;
    }
    if (typeof code === 'string' && clientVersion === undefined) {
      return code;
    }
  }
  return undefined;
}
