import type { InjectionToken } from '@nestjs/common';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import type { DataLayerHost } from './data-layer.js';
import { dataLayerMessages } from './data-layer.messages.js';

/**
 * The pool a layer was given: the pool itself, or the one the application provides under the
 * token given, told by `isPool`.
 * @throws IdempotencyOptionsError when no provider answers the token, or what was given or
 *   provided is not such a pool (`notAPool` names it).
 * @internal
 */
export function providedPool<P>(host: DataLayerHost, given: unknown, isPool: (candidate: unknown) => candidate is P, notAPool: (what: string) => string): P {
  let pool: unknown = given;
  const token = isPool(given) ? undefined : (given as InjectionToken);
  if (token !== undefined) {
    try {
      pool = host.moduleRef.get(token, { strict: false });
    } catch (error) {
      throw new IdempotencyOptionsError(dataLayerMessages.poolMissing(tokenName(token)), { cause: error });
    }
  }
  if (!isPool(pool)) {
    throw new IdempotencyOptionsError(notAPool(token === undefined ? 'the pool given' : tokenName(token)));
  }
  return pool;
}

function tokenName(token: InjectionToken): string {
  return typeof token === 'function' ? token.name : String(token);
}
