/** The SQLSTATE a claim's INSERT answers when it waited for a twin's row past its lock timeout. */
export const PG_LOCK_NOT_AVAILABLE = '55P03';

/** The SQLSTATE of a pg error, also when TypeORM wrapped it in a QueryFailedError. */
export function postgresErrorCode(error: unknown): string | undefined {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown } } | undefined;
  const code = candidate?.driverError?.code ?? candidate?.code;
  return typeof code === 'string' ? code : undefined;
}
