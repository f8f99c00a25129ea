/**
 * `promise`'s value, or undefined once `timeoutMs` passed without one (at once for 0 or less).
 * @internal
 */
export async function within<T>(promise: Promise<T>, timeoutMs: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), Math.max(0, timeoutMs))));
  try {
    return await Promise.race([promise, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
