/**
 * The claims this process has in flight, by consumer and key, so that a twin delivered to the
 * same process waits for the first one to settle without holding a pooled connection, and tries
 * its claim once that one has committed or rolled back. The database still decides every race:
 * this only tells a twin when trying again is worth a round trip.
 */
export class InFlightTwins {
  private readonly settled = new Map<string, Promise<void>>();

  /**
   * Records that a delivery of `id` is being claimed or processed here, unless another one is.
   * @returns a function to call once it settled, or the promise of the twin already in flight.
   */
  enter(id: string): { settle: () => void } | { twin: Promise<void> } {
    const twin = this.settled.get(id);
    if (twin) {
      return { twin };
    }
    let settle!: () => void;
    const settledHere = new Promise<void>((resolve) => (settle = resolve));
    this.settled.set(id, settledHere);
    return {
      settle: () => {
        if (this.settled.get(id) === settledHere) {
          this.settled.delete(id);
        }
        settle();
      },
    };
  }
}

/** Resolves true when `promise` settles within `timeoutMs`, false otherwise. */
export async function settlesWithin(promise: Promise<void>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, timeoutMs)))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
