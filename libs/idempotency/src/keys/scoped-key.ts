import { hash } from 'node:crypto';
import { MAX_KEY_LENGTH } from '../idempotency.constants.js';

/**
 * Separates the scope's digest from the client's key in a stored message id. A control character:
 * no key or scope a client can send holds one (they are refused), so a scoped id never equals an
 * unscoped key, nor another scope's id.
 * @internal
 */
export const SCOPED_KEY_SEPARATOR = '\u001f';

/**
 * Separates the scope's digest from the digest of a key too long to be stored beside it.
 * @internal
 */
export const SCOPED_DIGEST_SEPARATOR = '\u001e';

/** SHA-256 in base64url: 43 characters. */
function digest(text: string): string {
  return hash('sha256', text, 'base64url');
}

/**
 * The message id stored for `key` sent by the caller `scope`: the scope's SHA-256 (43
 * characters, so no user or tenant id is stored or logged in clear), a separator, and the key;
 * a key too long to fit the 255 characters of the column beside the digest (over 211 characters)
 * is stored as its own SHA-256. At most 87 characters more than nothing, never over 255.
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

/** The first 43 characters of an anonymous caller's id. */
const ANONYMOUS_PREFIX = digest(ANONYMOUS_SCOPE);

/**
 * A stored message id as a reader of a log or an error wants it: the client's key, quoted, and
 * that it is scoped to a caller (whose identity is not shown), or to the anonymous callers.
 * @internal
 */
export function shownKey(id: string): string {
  const plain = id.indexOf(SCOPED_KEY_SEPARATOR);
  if (plain >= 0) {
    return `'${id.slice(plain + 1)}' ${scopeShown(id)}`;
  }
  const hashed = id.indexOf(SCOPED_DIGEST_SEPARATOR);
  if (hashed >= 0) {
    return `with SHA-256 '${id.slice(hashed + 1)}' ${scopeShown(id)}`;
  }
  return `'${id}'`;
}

function scopeShown(id: string): string {
  return id.startsWith(ANONYMOUS_PREFIX) ? '(of an anonymous caller)' : '(scoped to its caller)';
}
