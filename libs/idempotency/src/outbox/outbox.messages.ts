import { shownKey } from '../errors/error.messages.js';

/** The message texts of the outbox and its relay. */
export const outboxMessages = {
  noPublishers: () => 'outbox.publishers names no publisher: give at least one, by the name messages give as `to` (`{ rabbitmq: new RabbitMqPublisher(...) }`).',
  notAPublisher: (name: string) => `outbox.publishers.${name} has no publish(message) method: give a RabbitMqPublisher, JetStreamPublisher, BullMqPublisher, SqsPublisher, KafkaPublisher or an OutboxPublisher of your own.`,
  notWholeNumber: (name: string, value: unknown, max: number) => `${name} must be a whole number from 1 to ${max}; got ${JSON.stringify(value)}.`,
  retryDelays: (retryMs: number, maxMs: number) => `outbox.relay.maxRetryDelay (${maxMs} ms) is shorter than outbox.relay.retryDelay (${retryMs} ms).`,
  notConfigured: () => 'Outbox.publish() needs the module\'s `outbox` option (its publishers and table): IdempotencyModule.forRoot({ outbox: { publishers: { ... } } }).',
  noTransaction: (inLease: string | undefined) =>
    (inLease === undefined
      ? 'Outbox.publish() was called outside an idempotent handler and without `transaction`: '
      : `Outbox.publish() was called in ${inLease}, a handler in the lease mode, which has no transaction, and without \`transaction\`: `) +
    'a message must be written in the transaction of the work it announces. Call it inside an idempotent handler in the ' +
    "transactional mode, or pass `{ transaction: (sql) => ... }`, a function that runs a statement in your open transaction.",
  notInTransaction: () =>
    'Outbox.publish(): the `transaction` function ran its statement outside a transaction block (PostgreSQL: "LOCK TABLE can only be used in transaction blocks"), ' +
    'where the message would commit on its own and be sent even if your work rolled back; nothing was written. Give a function that runs the statement in a ' +
    'transaction you opened and have not ended: `(sql) => manager.query(sql)` in `dataSource.transaction()`, `(sql) => client.query(sql)` after BEGIN; not the pool.',
  unknownDestination: (to: unknown, known: readonly string[]) => `Outbox.publish(): no publisher ${JSON.stringify(to)}; outbox.publishers has ${known.join(', ')}.`,
  invalidField: (field: string, rule: string, value: unknown) => `Outbox.publish(): \`${field}\` must be ${rule}; got ${JSON.stringify(value)?.slice(0, 100)}.`,
  refused: (to: string, reason: string) => `Outbox.publish(): the publisher '${to}' cannot send this message: ${reason}`,
  idWritten: (id: string) =>
    `Outbox.publish(): this transaction wrote a message with the id ${shownKey(id)} already, and an id is one message's: ` +
    'give each message of a handler an id of its own, such as `${idempotency.downstreamKey}:credit.granted`.',
  idTaken: (id: string) =>
    `Outbox.publish(): a message with the id ${shownKey(id)} was written already, and an id is one message's (the outbox table's id is unique): ` +
    'give each message an id of its own, such as `${idempotency.downstreamKey}:credit.granted`; nothing was written.',
  unknownFields: (what: string, unknown: readonly string[], known: readonly string[]) =>
    `Outbox.publish(): ${what} has ${unknown.map((field) => `\`${field}\``).join(', ')}, which publish() does not know and would ignore; ` +
    `it takes ${known.join(', ')}. Nothing was written.`,
  delayAndAvailableAt: () => 'Outbox.publish(): give `delay` or `availableAt`, not both. Nothing was written.',
  notJson: (cause: string) => `Outbox.publish(): the payload cannot be written as JSON: ${cause}`,
  noStream: (subject: string) =>
    `no JetStream stream takes the subject '${subject}' (or JetStream is not enabled on the server; the client says "jetstream is not enabled"): ` +
    'add a stream whose subjects include it before the relay publishes',
  kafkaPattern: () => "a Kafka message has no pattern besides its topic (Nest's Kafka transport takes the pattern from the topic): put the pattern in `address`.",
  kafkaTopic: (topic: string) =>
    `a Kafka topic's name is 1 to 249 letters, digits, '.', '_' or '-', and neither '.' nor '..' (the address is ${JSON.stringify(topic.slice(0, 300))}).`,
  kafkaIdHeader: (header: string) => `the header '${header}' is the one that carries the message's id.`,
  kafkaRefused: (topic: string, type: string) => `Kafka refused the message to the topic '${topic}' for good (${type}).`,
  publishTimedOut: (ms: number) => `no confirmation from the broker within ${ms} ms`,
  noRelay: () => 'OutboxRelay.runOnce() needs a relay in this process: the module\'s `outbox` with `relay` not false (`relay: { autoStart: false }` for one that runs only when called).',
  relayStarted: (table: string, batchSize: number, wokenBy: 'NOTIFY' | 'its process' | null, pollIntervalMs: number) =>
    `The outbox relay of ${table} started: batches of ${batchSize}, woken ${wokenBy === null ? '' : wokenBy === 'NOTIFY' ? 'by NOTIFY at each commit that writes messages, and ' : "at each commit of its process's handlers that writes messages, and "}every ${pollIntervalMs} ms.`,
  relayFailed: (table: string, cause: string) => `The outbox relay of ${table} failed a batch and carries on after ${'`pollInterval`'}: ${cause}`,
  listenLost: (table: string, cause: string) => `The outbox relay of ${table} lost its LISTEN connection (${cause}); it polls until it has listened again.`,
  deadLettered: (table: string, id: string, attempts: number, error: string, heldKey: string | null) =>
    `Outbox message ${shownKey(id)} of ${table} failed ${attempts} publishes and is parked as a dead letter (last error: ${error}); ` +
    (heldKey === null ? '' : `it holds back the later messages of its ordering key ${shownKey(heldKey)} until then (outbox.relay.deadLetterHoldsKey): `) +
    'requeue or discard it with IdempotencyAdmin.',
  publishFailed: (id: string, destination: string, attempt: number, delayMs: number, error: string) =>
    `Outbox message ${shownKey(id)} to ${destination} failed publish ${attempt} (${error}); retried in ${delayMs} ms.`,
};
