/** The message texts of every message transport. */
export const transportMessages = {
  unsupportedTransport: (transport: string) =>
    `Messages of ${transport} carry no default idempotency key: set \`key\` to a payload path or a function.`,
  unsupportedContext: (handler: string, type: string) =>
    `${handler} has @IdempotentHandler() and was called in a '${type}' context that no transport of the module reads: see the guide's transports.`,
  providerNotEnlisted: (handler: string) =>
    `${handler} has @IdempotentHandler() and was called, but no IdempotencyModule (or IdempotencyTestingModule) of a ` +
    'running application enlisted its instance: import the module, and keep the provider singleton-scoped (not request-scoped).',
  requeued: (pattern: string, attempt: number, maxAttempts: number, delayMs: number, reason: string) =>
    `Message on '${pattern}' failed (attempt ${attempt} of ${maxAttempts}) and is requeued in ${delayMs} ms: ${reason}`,
  deadLettered: (pattern: string, reason: string) =>
    `Message on '${pattern}' was rejected to the dead-letter path: ${reason}`,
  settleFailed: (pattern: string, reason: string) =>
    `Could not settle a message on '${pattern}' with the broker (${reason}); it will be redelivered and answered as a duplicate.`,
  attemptsExhausted: (attempts: number, reason: string) => `it failed ${attempts} times; last error: ${reason}`,
};
