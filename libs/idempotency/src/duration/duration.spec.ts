import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { formatDuration, MAX_RETENTION_MS, MAX_TIMER_MS, toMilliseconds } from './duration.js';

describe('toMilliseconds', () => {
  it.each([
    ['250ms', 250],
    ['30s', 30_000],
    ['15m', 900_000],
    ['72h', 259_200_000],
    ['7d', 604_800_000],
    ['1.5h', 5_400_000],
  ])('reads %s as %i ms', (text, expected) => {
    expect(toMilliseconds('retention', text, MAX_RETENTION_MS)).toBe(expected);
  });

  it.each(['7', '7 d', 'd', '-1d', '0s', '', '1w', 7, null, undefined])('refuses %p and names the option', (value) => {
    expect(() => toMilliseconds('retention', value, MAX_RETENTION_MS)).toThrow(IdempotencyOptionsError);
    expect(() => toMilliseconds('retention', value, MAX_RETENTION_MS)).toThrow(/^retention must be a duration/);
  });

  it('refuses a wait longer than timers and PostgreSQL hold, saying the limit', () => {
    expect(toMilliseconds('purge.interval', '24d', MAX_TIMER_MS)).toBe(24 * 86_400_000);
    expect(() => toMilliseconds('purge.interval', '25d', MAX_TIMER_MS)).toThrow(
      "purge.interval must be at most '24d'; got \"25d\".",
    );
    expect(() => toMilliseconds('retention', '36501d', MAX_RETENTION_MS)).toThrow(/retention must be at most '36500d'/);
  });
});

describe('formatDuration', () => {
  it.each([
    [259_200_000, '3d'],
    [90_000_000, '25h'],
    [5_400_000, '90m'],
    [30_000, '30s'],
    [1_500, '1500ms'],
  ])('writes %i ms as %s', (milliseconds, text) => {
    expect(formatDuration(milliseconds)).toBe(text);
    expect(toMilliseconds('retention', text, MAX_RETENTION_MS)).toBe(milliseconds);
  });
});
