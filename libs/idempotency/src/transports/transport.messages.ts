import { shownKey } from '../keys/scoped-key.js';

/**
 * What the one log line of a failed delivery says, on every message transport: which transport,
 * which message (the broker's id, and the claim's key where it differs), which consumer, what
 * became of the message (`outcome`, from `failureOutcomes`) and why.
 */
export interface DeliveryFailure {
  /** The transport's name: `rabbitmq`, `golevelup-rabbitmq`, `nats`, `nats-jetstream`, `bullmq`, `sqs`, `kafka`. */
  readonly transport: string;
  readonly consumer: string;
  /** The broker's own id of the message (AMQP messageId, Nats-Msg-Id, job id, SQS MessageId, Kafka's Idempotency-Key header or topic/partition/offset); undefined when it has none. */
  readonly messageId: unknown;
  /** The message's idempotency key, when it was read. */
  readonly key: string | undefined;
  readonly outcome: string;
  readonly cause: string;
}

/** Names a message by its broker id, and by its key where that differs. */
function messageName(messageId: unknown, key: string | undefined): string {
  const id = typeof messageId === 'string' || typeof messageId === 'number' ? String(messageId) : undefined;
  if (id === undefined) {
    return key === undefined ? 'without id' : `with key ${shownKey(key)}`;
  }
  return key === undefined || key === id ? `'${id}'` : `'${id}' (key ${shownKey(key)})`;
}

/** What became of a failed message, the middle of a `DeliveryFailure` line. */
export const failureOutcomes = {
  requeued: (attempt: number, maxAttempts: number, delayMs: number) => `failed (attempt ${attempt} of ${maxAttempts}) and is requeued in ${delayMs} ms`,
  readAgain: (attempt: number, maxAttempts: number, delayMs: number) =>
    `failed (attempt ${attempt} of ${maxAttempts}); its partition is paused and reads it again in ${delayMs} ms`,
  deadLettered: (attempts?: number) => `was rejected to the dead-letter path${attempts === undefined ? '' : `: it failed ${attempts} times; last error`}`,
  terminated: (attempts?: number) => `was terminated (JetStream will not redeliver it)${attempts === undefined ? '' : `: it failed ${attempts} times; last error`}`,
  leftToJobAttempts: (attempt: number, maxAttempts: number) => `failed (attempt ${attempt} of ${maxAttempts}) and is left to the job's attempts and backoff`,
  failedForGood: (attempt: number, maxAttempts: number) =>
    attempt < maxAttempts ? `failed for good, without further attempts (attempt ${attempt} of ${maxAttempts})` : `failed for good: it failed ${attempt} times; last error`,
  notRedelivered: () => "failed; NATS does not redeliver it: the sender's retry is its redelivery",
};

/** The message texts of every message transport. */
export const transportMessages = {
  deliveryFailed: ({ transport, consumer, messageId, key, outcome, cause }: DeliveryFailure) =>
    `${transport} message ${messageName(messageId, key)} for '${consumer}' ${outcome}: ${cause}`,
  unsupportedTransport: (transport: string) =>
    `Messages of ${transport} carry no default idempotency key: set \`key\` to a payload path or a function.`,
  unsupportedContext: (handler: string, type: string) =>
    `${handler} has @IdempotentHandler() and was called in a '${type}' context that no transport of the module reads: see the guide's page docs/transports.md.`,
  unplannedHandler: (handler: string) =>
    `${handler} has @IdempotentHandler() but is no handler the module found at start-up (a controller's route, a message ` +
    "pattern or a transport's provider handler of this application), so it has no plan: declare it in a module of the application.",
  unreadHandler: (handler: string, transport: string) =>
    `${handler} is an idempotent ${transport} handler, but no adapter of the module reads its deliveries: see the guide's page docs/transports.md.`,
  providerNotEnlisted: (handler: string) =>
    `${handler} has @IdempotentHandler() and was called, but no IdempotencyModule (or IdempotencyTestingModule) of a ` +
    'running application enlisted its instance: import the module, and keep the provider singleton-scoped (not request-scoped).',
  settleFailed: (pattern: string, reason: string) =>
    `Could not settle a message on '${pattern}' with the broker (${reason}); it will be redelivered and answered as a duplicate.`,
};
