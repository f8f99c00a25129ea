import { hash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';

/**
 * A SHA-256 of `payload` in canonical JSON: object keys sorted at every depth, so a retry that
 * serialises the same payload in another key order still matches, and any other change does not.
 * Bytes (`Buffer`, typed arrays) are hashed as bytes; dates, maps, sets and bigints by their
 * values, never as `{}`.
 */
export function fingerprint(payload: unknown): string {
  return hash('sha256', canonicalJson(payload), 'hex');
}
