/**
 * The claims this process has in flight, by consumer and key, so that a twin delivered to the
 * same process waits for the first one to settle without holding a pooled connection, and tries
 * its claim once that one has committed or rolled back. The database still decides every race:
 * this only tells a twin when trying again is worth a round trip.
 */
export class InFlightTwins {
  private readonly inFlight = new Map<string, InFlightTwin>();

  /**
   * Records that a delivery of `id` is being claimed or processed here, unless another one is.
   * @returns the delivery's own hooks (`won` once it claimed, `settle` once it settled), or the twin already in flight.
   */
  enter(id: string): { won: () => void; settle: (ending: TwinEnding) => void } | { twin: InFlightTwin } {
    const twin = this.inFlight.get(id);
    if (twin) {
      return { twin };
    }
    const here = new InFlightDelivery();
    this.inFlight.set(id, here);
    return {
      won: () => here.won(),
      settle: (ending) => {
        if (this.inFlight.get(id) === here) {
          this.inFlight.delete(id);
        }
        here.settle(ending);
      },
    };
  }
}

/**
 * A delivery in flight here. Most have no twin waiting for them, so the promises a twin waits on
 * are made only when one asks.
 */
class InFlightDelivery implements InFlightTwin {
  private endedAs: TwinEnding | undefined;
  private hasWon = false;
  private endingSignal: Signal<TwinEnding> | undefined;
  private claimedSignal: Signal<void> | undefined;

  get ending(): Promise<TwinEnding> {
    if (this.endedAs !== undefined) {
      return Promise.resolve(this.endedAs);
    }
    this.endingSignal ??= signal<TwinEnding>();
    return this.endingSignal.promise;
  }

  get claimed(): Promise<void> {
    if (this.hasWon) {
      return Promise.resolve();
    }
    this.claimedSignal ??= signal<void>();
    return this.claimedSignal.promise;
  }

  won(): void {
    this.hasWon = true;
    this.claimedSignal?.resolve();
  }

  settle(ending: TwinEnding): void {
    this.endedAs ??= ending;
    this.endingSignal?.resolve(this.endedAs);
  }
}

/** A delivery of this process in flight: `claimed` once it won its claim, `ending` once it settled. */
export interface InFlightTwin {
  readonly ending: Promise<TwinEnding>;
  readonly claimed: Promise<void>;
}

/**
 * How a twin's delivery ended: `committed` when the message is now processed in the database (the
 * twin committed it, or found it committed), so every waiting twin is a duplicate to replay at
 * once; `held` when a delivery of another process holds its claim; `open` when it is neither (the
 * twin rolled back or failed), so a waiting twin claims it anew.
 */
export type TwinEnding = 'committed' | 'held' | 'open';

interface Signal<T> {
  readonly promise: Promise<T>;
  readonly resolve: (value: T) => void;
}

/** A promise and what resolves it (`Promise.withResolvers()`, which Node 20 lacks). */
function signal<T>(): Signal<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => (resolve = done));
  return { promise, resolve };
}
