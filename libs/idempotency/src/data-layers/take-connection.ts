import { IdempotencyUnavailableError } from '../errors/idempotency.errors.js';
import { within } from '../duration/within.js';
import type { Claimant } from './data-layer.js';
import { dataLayerMessages } from './data-layer.messages.js';

/** How a layer's pool lends a connection for a claim. */
export interface ConnectionLoan<C> {
  /** Asks the pool for a connection. */
  take(): Promise<C>;
  /** Gives back a connection that came after the wait was given up. */
  giveBack(late: C): unknown;
  /** The pool holds more idle connections than requests waiting: the one asked for comes at its next tick. */
  readonly idleFree: boolean;
  /** How big the pool is and how many wait for it, for the error message. */
  figures(): { size?: number; waiting?: number };
}

/**
 * A connection from a layer's pool for `claimant`'s claim, waiting at most `timeoutMs` (no timer
 * when an idle one is free).
 * @throws IdempotencyUnavailableError when none comes in time or the server cannot be reached.
 * @internal
 */
export async function takeConnection<C>(loan: ConnectionLoan<C>, timeoutMs: number, claimant: Claimant): Promise<C> {
  let taking: Promise<C>;
  let connection: C | undefined;
  try {
    taking = loan.take();
    connection = loan.idleFree ? await taking : await within(taking, timeoutMs);
  } catch (error) {
    throw new IdempotencyUnavailableError(dataLayerMessages.connectFailed(claimant.consumer, claimant.key, (error as Error).message), claimant.consumer, claimant.key, {
      cause: error,
    });
  }
  if (connection === undefined) {
    // The pool still hands the connection over later; give it straight back then.
    taking.then((late) => loan.giveBack(late), () => undefined);
    throw new IdempotencyUnavailableError(dataLayerMessages.noConnection(claimant.consumer, claimant.key, timeoutMs, loan.figures()), claimant.consumer, claimant.key);
  }
  return connection;
}
