import { hash } from 'node:crypto';

/**
 * A SHA-256 of the payload in canonical JSON (object keys sorted at every depth), so a retry that
 * serialises the same payload in another key order still matches, and any other change does not.
 */
export function fingerprint(payload: unknown): string {
  return hash('sha256', canonicalJson(payload), 'hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) {
    return `[${value.map(canonicalJson).join(',')}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
