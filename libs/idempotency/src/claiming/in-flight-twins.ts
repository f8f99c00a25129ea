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
    let settle!: (ending: TwinEnding) => void;
    let won!: () => void;
    const here: InFlightTwin = {
      ending: new Promise<TwinEnding>((resolve) => (settle = resolve)),
      claimed: new Promise<void>((resolve) => (won = resolve)),
    };
    this.inFlight.set(id, here);
    return {
      won,
      settle: (ending) => {
        if (this.inFlight.get(id) === here) {
          this.inFlight.delete(id);
        }
        settle(ending);
      },
    };
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

/** How `twin` ended, or undefined when it did not within `timeoutMs`. */
export async function endingWithin(twin: Promise<TwinEnding>, timeoutMs: number): Promise<TwinEnding | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([twin, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), Math.max(0, timeoutMs))))]);
  } finally {
    clearTimeout(timer);
  }
}
