/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: number[]): number {
  if (values.length === 0) {
    return Number.NaN;
  }
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Rounds to `digits` decimals, for figures in the results. */
export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** `value` minus `base`, where both were measured. */
export function difference(value: number | undefined, base: number | undefined): number | undefined {
  return value === undefined || base === undefined ? undefined : value - base;
}
