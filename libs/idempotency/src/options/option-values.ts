import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { optionValueMessages } from './option-values.messages.js';

/**
 * Whether `value` is a whole number above 0.
 * @internal
 */
export function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

/**
 * `value` as a flag. @throws IdempotencyOptionsError naming `name`.
 * @internal
 */
export function toFlag(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') {
    throw new IdempotencyOptionsError(optionValueMessages.invalidFlag(name, value));
  }
  return value;
}
