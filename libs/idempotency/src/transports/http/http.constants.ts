/** Seconds a client is told to wait (`Retry-After`) before retrying a 409 or 503. */
export const RETRY_AFTER_SECONDS = 1;
