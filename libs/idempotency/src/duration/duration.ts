import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import type { Duration } from '../errors/idempotency.errors.js';
import { durationMessages } from './duration.messages.js';

export type { Duration };

const MILLISECONDS_PER_UNIT: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * The longest wait or interval: 24 days, within what Node.js timers (`setTimeout`) and
 * PostgreSQL's millisecond settings (`lock_timeout`) hold (2^31 - 1 ms, 24.8 days). Beyond that a
 * timer fires at once, in a tight loop, and PostgreSQL refuses the setting.
 * @internal
 */
export const MAX_TIMER_MS = 24 * 86_400_000;

/**
 * The longest retention or redelivery horizon: 100 years.
 * @internal
 */
export const MAX_RETENTION_MS = 36_500 * 86_400_000;

/**
 * Converts a {@link Duration} to milliseconds.
 * @param name The option's name, for the error message.
 * @param maxMs The longest the option may be.
 * @throws IdempotencyOptionsError when the text is not a positive duration of at most `maxMs`.
 * @internal
 */
export function toMilliseconds(name: string, value: unknown, maxMs: number): number {
  const match = typeof value === 'string' ? /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(value) : null;
  const milliseconds = match ? Math.round(Number(match[1]) * MILLISECONDS_PER_UNIT[match[2]]) : 0;
  if (milliseconds <= 0) {
    throw new IdempotencyOptionsError(durationMessages.invalidDuration(name, value));
  }
  if (milliseconds > maxMs) {
    throw new IdempotencyOptionsError(durationMessages.durationTooLong(name, value, formatDuration(maxMs)));
  }
  return milliseconds;
}

/**
 * Writes milliseconds as a {@link Duration} in the largest unit that divides them exactly: `'3d'`, `'90m'`.
 * @internal
 */
export function formatDuration(milliseconds: number): Duration {
  const [unit, size] = Object.entries(MILLISECONDS_PER_UNIT)
    .reverse()
    .find(([, perUnit]) => milliseconds % perUnit === 0) ?? ['ms', 1];
  return `${milliseconds / size}${unit}` as Duration;
}
