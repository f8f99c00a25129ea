/** Distinct sender names counted apart in the metrics; the others are counted as `OTHER_SENDERS`. */
export const MAX_COUNTED_SENDERS = 100;
export const OTHER_SENDERS = '(other)';
