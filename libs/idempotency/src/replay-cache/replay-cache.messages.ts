/** The message texts of the replay cache. */
export const replayCacheMessages = {
  invalidReplayCache: (value: unknown) =>
    `replayCache must be an object such as { maxEntries: 10000, maxBytes: 16777216, maxAge: '1m' }, or false; got ${JSON.stringify(value)}.`,
};
