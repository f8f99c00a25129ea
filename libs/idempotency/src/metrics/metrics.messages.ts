/** The message texts of the counters and their Prometheus registry. */
export const metricsMessages = {
  invalidMetricsRegistry: () =>
    "metrics.registry must be a prom-client Registry (e.g. `new Registry()` or prom-client's `register`), or false for none.",
  metricsRegisteredTwice: (name: string) =>
    `The metrics registry already holds ${name}: another IdempotencyModule registered its counters there. ` +
    'Give each application its own registry (metrics: { registry }), or close the other one first.',
  metricsAlreadyInDefaultRegistry: () =>
    "prom-client's default registry already holds the idempotency counters of another IdempotencyModule in this process; " +
    "this one's are not registered (pass metrics: { registry } to register them elsewhere).",
  tooManySenders: (max: number, other: string) =>
    `More than ${max} sender names were counted; further ones are counted together as '${other}'. ` +
    'A sender function should answer one of a few known names (the provider, the upstream service), not an id.',
  storeSampleFailed: (table: string, reason: string) =>
    `Could not sample the store "${table}" for its gauges: ${reason}. The gauges keep their last sample; the next one is tried at the next interval.`,
};
