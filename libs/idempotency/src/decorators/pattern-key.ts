import { canonicalJson } from '../keys/canonical-json.js';

/**
 * One name for a microservice pattern, whether it comes from a decorator (a string or an object)
 * or from a transport (`RmqContext.getPattern()`: the string, or the object as JSON).
 */
export function patternKey(pattern: unknown): string {
  if (typeof pattern !== 'string') {
    return canonicalJson(pattern);
  }
  if (pattern.startsWith('{')) {
    try {
      return canonicalJson(JSON.parse(pattern));
    } catch {
      return pattern;
    }
  }
  return pattern;
}
