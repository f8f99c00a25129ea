import type { ExecutionContext } from '@nestjs/common';
import type { KeySource } from '../options/idempotent-handler.options.js';
import { MAX_KEY_LENGTH } from '../idempotency.constants.js';
import { IdempotencyKeyError, IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { keyMessages } from './key.messages.js';

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Turns what was found where the key lives into a valid key, or explains what is wrong with it.
 * @param source Where the key was looked for, for the error message (`the Idempotency-Key header`).
 * @throws IdempotencyKeyError when the key is missing, not a string or number, empty, longer than
 * 255 characters (Unicode code points, as PostgreSQL counts them) or holds control characters.
 */
export function toMessageKey(value: unknown, source: string): string {
  return toBoundedText(value, 'idempotency key', source);
}

/**
 * Checks a sender's name as a key is checked: it labels the claim and the metrics.
 * @throws IdempotencyKeyError when it is not a printable text of 1 to 255 characters.
 */
export function toSenderName(value: unknown, source: string): string {
  return toBoundedText(value, 'sender', source);
}

/**
 * Checks a scope function's answer (the caller's identity) as a key is checked.
 * @throws IdempotencyKeyError when it is not a printable text of 1 to 255 characters.
 */
export function toScope(value: unknown, source: string): string {
  return toBoundedText(value, 'scope', source);
}

function toBoundedText(value: unknown, what: string, source: string): string {
  if (value === undefined || value === null) {
    throw new IdempotencyKeyError(keyMessages.textMissing(what, source), source);
  }
  if (typeof value !== 'string' && typeof value !== 'number') {
    throw new IdempotencyKeyError(keyMessages.textNotString(what, source), source);
  }
  const text = String(value);
  if (text.length === 0) {
    throw new IdempotencyKeyError(keyMessages.textEmpty(what, source), source);
  }
  // UTF-16 code units are at least as many as characters: only a long text needs counting.
  const length = text.length > MAX_KEY_LENGTH ? characterCount(text) : text.length;
  if (length > MAX_KEY_LENGTH) {
    throw new IdempotencyKeyError(keyMessages.textTooLong(what, source, length), source);
  }
  if (CONTROL_CHARACTERS.test(text)) {
    throw new IdempotencyKeyError(keyMessages.textHasControlCharacters(what, source), source);
  }
  return text;
}

/** Characters as PostgreSQL counts them in a `varchar(255)`: Unicode code points (an emoji is one, not two). */
function characterCount(text: string): number {
  let count = 0;
  for (let index = 0; index < text.length; index++, count++) {
    const unit = text.charCodeAt(index);
    if (unit >= 0xd800 && unit <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        index++;
      }
    }
  }
  return count;
}

/**
 * A handler's or the module's `key` as a list of sources, tried in order.
 * @throws IdempotencyOptionsError naming `name` when it is no source nor a non-empty list of them.
 * @internal
 */
export function toKeySources(name: string, value: unknown): readonly KeySource[] {
  const sources: unknown[] = Array.isArray(value) ? value : [value];
  if (sources.length === 0 || !sources.every(isKeySource)) {
    throw new IdempotencyOptionsError(keyMessages.invalidKeySource(name, value));
  }
  return sources as KeySource[];
}

function isKeySource(value: unknown): boolean {
  if (typeof value === 'function') {
    return true;
  }
  const fields = value !== null && typeof value === 'object' ? Object.entries(value) : [];
  return fields.length === 1 && (fields[0][0] === 'header' || fields[0][0] === 'body') && typeof fields[0][1] === 'string' && fields[0][1].length > 0;
}

/**
 * One place a delivery's key may be: where, for errors (`the Idempotency-Key header`), and what a
 * delivery from `source` holds there (`undefined` or `null`: nothing).
 * @internal
 */
export interface KeyLookup<S> {
  readonly where: string;
  readonly find: (context: ExecutionContext, source: S) => unknown;
}

/**
 * The key reader of `lookups`: the value of the first that holds one, checked as a key.
 * @throws IdempotencyKeyError when none holds a value (naming every place looked at), or the value is no valid key.
 * @internal
 */
export function keyReader<S>(lookups: readonly KeyLookup<S>[]): (context: ExecutionContext, source: S) => string {
  if (lookups.length === 1) {
    const [{ where, find }] = lookups;
    return (context, source) => toMessageKey(find(context, source), where);
  }
  const everywhere = lookups.map(({ where }) => where).join(' or ');
  return (context, source) => {
    for (const { where, find } of lookups) {
      const value = find(context, source);
      if (value !== undefined && value !== null) {
        return toMessageKey(value, where);
      }
    }
    return toMessageKey(undefined, everywhere);
  };
}

/**
 * Whether a delivery holds no key in any of `lookups`; a place that cannot be read (a header sent
 * twice) holds one, for the key reader to refuse.
 * @internal
 */
export function keyAbsence<S>(lookups: readonly KeyLookup<S>[]): (context: ExecutionContext, source: S) => boolean {
  return (context, source) =>
    lookups.every(({ find }) => {
      try {
        const value = find(context, source);
        return value === undefined || value === null;
      } catch {
        return false;
      }
    });
}

/** Reads a dotted path such as `'data.id'` out of a parsed body or payload. */
export function readPath(payload: unknown, path: string): unknown {
  let value = payload;
  for (const segment of path.split('.')) {
    if (value === null || typeof value !== 'object') {
      return undefined;
    }
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}
