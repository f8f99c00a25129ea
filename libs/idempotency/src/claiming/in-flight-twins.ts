/**
 * The claims this process has in flight, by consumer and key, so that a twin delivered to the
 * same process waits for the first one to settle without holding a pooled connection, and tries
 * its claim once that one has committed or rolled back. The database still decides every race:
 * this only tells a twin when trying again is worth a round trip.
 */
export class InFlightTwins {
  private readonly settled = new Map<string, Promise<TwinEnding>>();

  /**
   * Records that a delivery of `id` is being claimed or processed here, unless another one is.
   * @returns a function to call once it settled, or the promise of how the twin in flight ends.
   */
  enter(id: string): { settle: (ending: TwinEnding) => void } | { twin: Promise<TwinEnding> } {
    const twin = this.settled.get(id);
    if (twin) {
      return { twin };
    }
    let settle!: (ending: TwinEnding) => void;
    const settledHere = new Promise<TwinEnding>((resolve) => (settle = resolve));
    this.settled.set(id, settledHere);
    return {
      settle: (ending) => {
        if (this.settled.get(id) === settledHere) {
          this.settled.delete(id);
        }
        settle(ending);
      },
    };
  }
}

/**
 * How a twin's delivery ended: `committed` when the message is now processed in the database (the
 * twin committed it, or found it committed), so every waiting twin is a duplicate to replay at
 * once; `open` when it is not (rolled back, or held by a delivery of another process).
 */
export type TwinEnding = 'committed' | 'open';

/** How `twin` ended, or undefined when it did not within `timeoutMs`. */
export async function endingWithin(twin: Promise<TwinEnding>, timeoutMs: number): Promise<TwinEnding | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([twin, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), Math.max(0, timeoutMs))))]);
  } finally {
    clearTimeout(timer);
  }
}
