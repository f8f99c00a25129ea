import { DuplicateRateWindow } from './duplicate-rate.window.js';

describe('DuplicateRateWindow', () => {
  let now: number;
  let window: DuplicateRateWindow;

  beforeEach(() => {
    now = 1_000_000;
    window = new DuplicateRateWindow(60_000, () => now);
  });

  it('counts deliveries and duplicates inside the window', () => {
    window.add(false);
    window.add(true);
    now += 30_000;
    window.add(true);
    expect(window.read()).toEqual({ deliveries: 3, duplicates: 2 });
  });

  it('forgets what fell out of the window, slot by slot', () => {
    window.add(true);
    now += 30_000;
    window.add(false);
    now += 36_000;
    expect(window.read()).toEqual({ deliveries: 1, duplicates: 0 });
    now += 30_000;
    expect(window.read()).toEqual({ deliveries: 0, duplicates: 0 });
  });

  it('reuses a slot a whole window later without carrying its old counts', () => {
    window.add(true);
    now += 60_000;
    window.add(false);
    expect(window.read()).toEqual({ deliveries: 1, duplicates: 0 });
  });
});
