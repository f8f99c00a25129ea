import { hash } from 'node:crypto';

/**
 * `value` as JSON with object keys sorted at every depth, so that equal values in another key
 * order read the same. Bytes (`Buffer`, typed arrays) are written as their SHA-256; dates, maps,
 * sets and bigints by their values, never as `{}`.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    return typeof value === 'bigint' ? `{"$bigint":"${value}"}` : (JSON.stringify(value) ?? 'null');
  }
  if (Array.isArray(value)) {
    let json = '[';
    for (let index = 0; index < value.length; index++) {
      // A hole reads as nothing, as map() and join() wrote it before this loop.
      json += (index === 0 ? '' : ',') + (index in value ? canonicalJson(value[index]) : '');
    }
    return `${json}]`;
  }
  if (ArrayBuffer.isView(value)) {
    return `{"$bytes":"${hash('sha256', new Uint8Array(value.buffer, value.byteOffset, value.byteLength), 'hex')}"}`;
  }
  if (value instanceof Date) {
    return `{"$date":${JSON.stringify(Number.isNaN(value.getTime()) ? null : value.toISOString())}}`;
  }
  if (value instanceof Map) {
    const entries = [...value].map(([key, entry]) => `[${canonicalJson(key)},${canonicalJson(entry)}]`);
    return `{"$map":[${entries.sort().join(',')}]}`;
  }
  if (value instanceof Set) {
    return `{"$set":[${[...value].map(canonicalJson).sort().join(',')}]}`;
  }
  const withJson = value as { toJSON?: () => unknown };
  if (typeof withJson.toJSON === 'function') {
    return canonicalJson(withJson.toJSON());
  }
  const record = value as Record<string, unknown>;
  let json = '{';
  for (const key of Object.keys(record).sort()) {
    const entry = record[key];
    if (entry !== undefined && typeof entry !== 'function') {
      json += `${json.length === 1 ? '' : ','}${JSON.stringify(key)}:${canonicalJson(entry)}`;
    }
  }
  return `${json}}`;
}
