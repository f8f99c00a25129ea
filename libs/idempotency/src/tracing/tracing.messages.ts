/** The message texts of tracing. */
export const tracingMessages = {
  invalidTracing: (value: unknown) => `tracing must be an object such as { recordKey: false }, or false; got ${JSON.stringify(value)}.`,
};
