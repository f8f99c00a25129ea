/** Deliveries and duplicates counted over a recent window. */
export interface WindowCounts {
  deliveries: number;
  duplicates: number;
}

const SLOTS = 10;

/**
 * Counts a sender's deliveries and duplicates over the last `windowMs` (to a tenth of it: the
 * window moves in ten slots), in constant memory.
 */
export class DuplicateRateWindow {
  private readonly slotMs: number;
  private readonly slots = Array.from({ length: SLOTS }, () => ({ epoch: -1, deliveries: 0, duplicates: 0 }));

  /** @param now The clock, in milliseconds. */
  constructor(
    windowMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.slotMs = windowMs / SLOTS;
  }

  add(duplicate: boolean): void {
    const epoch = this.epoch();
    const slot = this.slots[epoch % SLOTS];
    if (slot.epoch !== epoch) {
      Object.assign(slot, { epoch, deliveries: 0, duplicates: 0 });
    }
    slot.deliveries += 1;
    slot.duplicates += duplicate ? 1 : 0;
  }

  read(): WindowCounts {
    const current = this.epoch();
    return this.slots
      .filter((slot) => current - slot.epoch < SLOTS)
      .reduce((sum, slot) => ({ deliveries: sum.deliveries + slot.deliveries, duplicates: sum.duplicates + slot.duplicates }), {
        deliveries: 0,
        duplicates: 0,
      });
  }

  private epoch(): number {
    return Math.floor(this.now() / this.slotMs);
  }
}
