/**
 * Whether a data layer's error is the database's error `code`, however the layer wrapped it: its
 * own `code`, a `driverError` (TypeORM) or a `cause` (Drizzle) that has it, or only the server's
 * `text` in a message (Prisma).
 * @internal
 */
export function reportsError(error: unknown, code: string, text: string): boolean {
  let cause = error;
  for (let depth = 0; typeof cause === 'object' && cause !== null && depth < 4; depth++) {
    const { code: own, message, driverError, cause: next } = cause as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown };
    if (own === code || (typeof message === 'string' && message.includes(text))) {
      return true;
    }
    cause = driverError ?? next;
  }
  return false;
}
