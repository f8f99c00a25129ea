/** The message texts of durations. */
export const durationMessages = {
  invalidDuration: (name: string, value: unknown) =>
    `${name} must be a duration such as '500ms', '30s', '15m', '72h' or '7d'; got ${JSON.stringify(value)}.`,
  durationTooLong: (name: string, value: unknown, max: string) => `${name} must be at most '${max}'; got ${JSON.stringify(value)}.`,
};
