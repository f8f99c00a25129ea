import { hash } from 'node:crypto';
import { SCOPED_DIGEST_SEPARATOR, SCOPED_KEY_SEPARATOR, shownKey } from '../errors/error.messages.js';
import { MAX_KEY_LENGTH } from '../idempotency.constants.js';

export { shownKey };

/** SHA-256 in base64url: 43 characters. */
function digest(text: string): string {
  return hash('sha256', text, 'base64url');
}

/**
 * The message id stored for `key` sent by the caller `scope`: the scope's SHA-256 (43
 * characters, so no user or tenant id is stored or logged in clear), a separator, and the key;
 * a key too long to fit the 255 characters of the column beside the digest (over 211 UTF-16 code
 * units, as `length` counts them: a character outside the Basic Multilingual Plane, an emoji,
 * counts two) is stored as its own SHA-256. At most 87 characters more than nothing, never over 255.
 * @param scope the caller's identity, validated (1 to 255 printable characters), or `ANONYMOUS_SCOPE`
 * @internal
 */
export function scopedMessageId(key: string, scope: string): string {
  const prefix = digest(scope);
  const plain = `${prefix}${SCOPED_KEY_SEPARATOR}${key}`;
  return plain.length <= MAX_KEY_LENGTH ? plain : `${prefix}${SCOPED_DIGEST_SEPARATOR}${digest(key)}`;
}

/**
 * The scope of callers a scope function cannot name (an HTTP request with no signed-in user): the
 * empty text, which no caller's identity can be (a scope function's answer is 1 to 255
 * characters). Their ids are `scopedMessageId(key, ANONYMOUS_SCOPE)`: the SHA-256 of nothing,
 * a separator and the key, apart from every caller's ids and from unscoped keys.
 * @internal
 */
export const ANONYMOUS_SCOPE = '';

