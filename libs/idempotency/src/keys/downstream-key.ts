import { hash } from 'node:crypto';

/**
 * The idempotency key a handler sends to other services for one message: a SHA-256 (hex) of the
 * consumer and the key, the same for every delivery and every process.
 */
export function downstreamKey({ consumer, key }: { consumer: string; key: string }): string {
  return hash('sha256', `nestjs-idempotent-consumer\u0000${consumer}\u0000${key}`, 'hex');
}
