/** The base class of every error this library throws, so callers can `instanceof` any of them. */
export class IdempotencyError extends Error {
  override readonly name: string = 'IdempotencyError';
}
