/** A RabbitMQ retry waits at most this many times the handler's `retryDelay`. */
export const MAX_RETRY_DELAY_FACTOR = 64;
