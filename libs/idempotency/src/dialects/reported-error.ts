/**
 * A data layer's error and the errors it wraps, outermost first: a `driverError` (TypeORM), else a
 * `cause` (Drizzle), else the driver adapter's error in `meta` (Prisma), four deep at most.
 * @internal
 */
export function* wrappedErrors(error: unknown): Generator<{ readonly code?: unknown; readonly errno?: unknown; readonly originalCode?: unknown; readonly message?: unknown }> {
  let candidate = error;
  for (let depth = 0; typeof candidate === 'object' && candidate !== null && depth < 4; depth++) {
    yield candidate;
    const { driverError, cause, meta } = candidate as { driverError?: unknown; cause?: unknown; meta?: { driverAdapterError?: unknown } };
    candidate = driverError ?? cause ?? meta?.driverAdapterError;
  }
}

/**
 * Whether a data layer's error is the database's error `code`, however the layer wrapped it
 * (`wrappedErrors()`), or only the server's `text` in a message (Prisma).
 * @internal
 */
export function reportsError(error: unknown, code: string, text: string): boolean {
  for (const { code: own, message } of wrappedErrors(error)) {
    if (own === code || (typeof message === 'string' && message.includes(text))) {
      return true;
    }
  }
  return false;
}
