import { MAX_KEY_LENGTH } from './idempotency.constants.js';
import { shownKey } from './keys/scoped-key.js';

/** Every message text the library produces, in one place. */
export const messages = {
  textMissing: (what: string, source: string) => `The message has no ${what}: ${source} is missing.`,
  textNotString: (what: string, source: string) => `The ${what} (${source}) must be a string or a number.`,
  textEmpty: (what: string, source: string) => `The ${what} (${source}) is empty.`,
  textTooLong: (what: string, source: string, length: number) =>
    `The ${what} (${source}) is ${length} characters long; at most ${MAX_KEY_LENGTH} are accepted.`,
  textRepeated: (what: string, source: string, count: number) =>
    `The ${what} (${source}) came ${count} times in one request; it takes exactly one value ` +
    '(as the IETF Idempotency-Key draft defines): send the header once.',
  textHasControlCharacters: (what: string, source: string) => `The ${what} (${source}) contains control characters.`,
  keyReused: (key: string) =>
    `The idempotency key ${shownKey(key)} was already used for a different payload; use a new key for a new operation.`,
  transactionAborted: (consumer: string, key: string) =>
    `PostgreSQL aborted the transaction of ${shownKey(key)} for ${consumer}: a statement in the handler failed and the handler ` +
    'carried on, so nothing could be committed, the claim included. Run statements that may fail in a savepoint ' +
    '(manager.transaction(...)) to carry on after their failure.',
  noConnection: (consumer: string, key: string, timeoutMs: number, pool: { size?: number; waiting?: number }) =>
    `No database connection came within ${timeoutMs} ms for ${shownKey(key)} (${consumer})` +
    (pool.size === undefined ? '' : `: all ${pool.size} connections of the pool were busy, ${pool.waiting ?? 0} requests waiting`) +
    '. Nothing was claimed; retry. Size the pool for the handlers that run at once, or raise connectionTimeout.',
  connectFailed: (consumer: string, key: string, reason: string) =>
    `The database could not be reached for ${shownKey(key)} (${consumer}): ${reason}. Nothing was claimed; retry.`,
  claimTransactionEnded: (consumer: string) =>
    `${consumer} ended the claim's transaction itself (a COMMIT or ROLLBACK sent as SQL), so its work did not commit ` +
    'with the claim. The transaction belongs to @IdempotentHandler(): return from the handler to commit, throw to roll back.',
  claimTransactionControlled: (consumer: string, call: string) =>
    `${consumer} called ${call} on the claim's transaction, which belongs to @IdempotentHandler(): return from the ` +
    'handler to commit it, throw to roll it back. Nested transactions (manager.transaction()) are savepoints and are fine.',
  strongerIsolationRequested: (consumer: string, requested: string, claim: string) =>
    `${consumer} asked for a ${requested} transaction inside the claim's ${claim} transaction, which cannot be raised. ` +
    `Run the handler at that level: @IdempotentHandler({ isolationLevel: '${requested}' }).`,
  responseTooLarge: (consumer: string, key: string, maxBodyBytes: number) =>
    `The response of ${consumer} to ${shownKey(key)} is larger than replay.maxBodyBytes (${maxBodyBytes} bytes), so it cannot be ` +
    'recorded for its duplicates; nothing was committed. Raise replay.maxBodyBytes, or answer with less (an id and a link).',
  unrecordedResponse: (consumer: string, key: string) =>
    `${shownKey(key)} was committed for ${consumer} without its response: its handler ended the claim's transaction itself, ` +
    'so this duplicate cannot be answered with what the first delivery was sent.',
  commitUnsettled: (key: string, reason: string) =>
    `The commit of ${shownKey(key)} did not complete (${reason}). Retry: if it did commit, the retry is answered with its response.`,
  otherDataSourceUsed: (consumer: string, dataSource: string) =>
    `${consumer} used the data source ${dataSource} inside its idempotent handler. Its writes commit on their own, not ` +
    "with the claim: a crash between them and the claim's commit applies them again on redelivery. Write through the " +
    "claims' data source, or make those writes idempotent themselves.",
  inFlight: (key: string) =>
    `A message with the idempotency key ${shownKey(key)} is still being processed; retry after it completes.`,
  transient: (key: string, code: string) =>
    `The database aborted the transaction of ${shownKey(key)} (PostgreSQL ${code}); nothing was committed, retry.`,
  schemaMissing: (table: string, missing: readonly string[], migrations: readonly string[]) =>
    `The processed-messages store (table ${table}) lacks what this version of nestjs-idempotent-consumer needs: ` +
    `${missing.join('; ')}. Add ${listed(migrations)} to the data source's migrations and run them. ` +
    "The data source needs all of the library's migrations, in this order: CreateProcessedMessagesTable1764633600000, " +
    'CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000 (each subclassed with the ' +
    "table's name if it is not the default); the last brings a table created by an earlier version to the current shape.",
  claimVanished: (key: string) =>
    `The claim of ${shownKey(key)} disappeared while it was being read (purged concurrently); retry.`,
  noClaimTransactionInLeaseMode: (consumer: string) =>
    `${consumer} runs in lease mode, which holds no claim transaction: IdempotencyContext.manager has none to give. ` +
    'Write through your own transactions, and call other services with IdempotencyContext.downstreamKey.',
  noLeaseInTransactionalMode: (consumer: string) =>
    `${consumer} runs in the transactional mode, which holds no lease to extend: set mode: 'lease' on the handler to hold one.`,
  leaseLost: (consumer: string, key: string, held?: { heldMs: number; leaseMs: number; renewLeaseForMs: number }) =>
    `The lease of ${shownKey(key)} for ${consumer} expired and another delivery took it over, so this delivery's result was not ` +
    'recorded' +
    (held
      ? ` (the handler ran ${seconds(held.heldMs)} under a lease of ${seconds(held.leaseMs)}, ` +
        (held.renewLeaseForMs > 0 ? `renewed up to ${seconds(held.renewLeaseForMs)} after the claim)` : 'never renewed)')
      : '') +
    "; the delivery that holds the lease answers the message's duplicates. Retry, or raise the handler's renewLeaseFor " +
    '(or its lease) above the time it takes.',
  leaseRenewalLost: (consumer: string, key: string, heldMs: number) =>
    `The lease of ${shownKey(key)} for ${consumer} could not be renewed ${seconds(heldMs)} after its claim: it expired and another ` +
    'delivery took it over (was the event loop blocked for longer than two thirds of the lease?). The handler runs on, ' +
    'but its result will not be recorded. Renewing stops.',
  leaseRenewalFailed: (consumer: string, key: string, reason: string) =>
    `The lease of ${shownKey(key)} for ${consumer} could not be renewed: the store failed (${reason}). Trying again at the next renewal.`,
  storeFailed: (store: string, consumer: string, key: string, reason: string) =>
    `The lease store '${store}' failed for ${shownKey(key)} (${consumer}): ${reason}. Retry.`,
  invalidStore: (name: string) =>
    name === 'postgres'
      ? "stores.postgres is the built-in store of the processed-messages table: give your store another name."
      : `stores.${name} must be a lease store (claim, complete, release and extend), e.g. new RedisLeaseStore(redisClient).`,
  unknownStore: (handler: string, store: string, known: readonly string[]) =>
    `${handler} uses the lease store '${store}', which is not configured; the stores are ${known.map((name) => `'${name}'`).join(', ')}. ` +
    `Add it to the module's stores: { ${store}: ... }.`,
  transactionalModeNeedsPostgres: (handler: string, store: string) =>
    `${handler} runs in the transactional mode, which claims in the handler's PostgreSQL transaction, but its store is '${store}'. ` +
    "Set mode: 'lease' to use that store, or store: 'postgres'.",
  testingManagerMissing: () =>
    'IdempotencyContext.manager has no EntityManager under IdempotencyTestingModule: pass the one the handler ' +
    'should use, IdempotencyTestingModule.forRoot({ manager }) (a fake, or the manager of a test database).',
  noActiveClaim: () =>
    'IdempotencyContext was used outside an @IdempotentHandler(): there is no idempotent transaction here.',
  invalidDuration: (name: string, value: unknown) =>
    `${name} must be a duration such as '500ms', '30s', '15m', '72h' or '7d'; got ${JSON.stringify(value)}.`,
  durationTooLong: (name: string, value: unknown, max: string) => `${name} must be at most '${max}'; got ${JSON.stringify(value)}.`,
  invalidChoice: (name: string, value: unknown, allowed: readonly string[]) =>
    `${name} must be one of ${allowed.map((choice) => `'${choice}'`).join(', ')}; got ${JSON.stringify(value)}.`,
  invalidFingerprint: (handler: string, value: unknown) =>
    `fingerprint of ${handler} must be a function of the execution context or false; got ${JSON.stringify(value)}.`,
  invalidBodyLimit: (value: unknown, max: number) =>
    `replay.maxBodyBytes must be a whole number of bytes from 1 to ${max}; got ${JSON.stringify(value)}.`,
  invalidExcludedHeaders: (value: unknown) =>
    `replay.excludeHeaders must be a list of header names, e.g. ['x-request-id']; got ${JSON.stringify(value)}.`,
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
  invalidTracing: (value: unknown) => `tracing must be an object such as { recordKey: false }, or false; got ${JSON.stringify(value)}.`,
  packageMissing: (packageName: string, feature: string) =>
    `The "${packageName}" package is missing: install it to use ${feature} (npm install ${packageName}).`,
  invalidTableName: (value: unknown) =>
    `tableName must be a plain PostgreSQL identifier (letters, digits, underscores) of at most 56 characters; got ${JSON.stringify(value)}.`,
  invalidDataSource: (value: unknown) => `dataSource must be a data source name; got ${JSON.stringify(value)}.`,
  dataSourceMissing: (name: string | undefined) =>
    name === undefined
      ? 'IdempotencyModule found no TypeORM data source (it looked for the default data source): import ' +
        'TypeOrmModule.forRoot(...) in the application, with the PostgreSQL database that holds the processed-messages ' +
        "table, or set the module's dataSource option to the name of the data source that does."
      : `IdempotencyModule found no TypeORM data source named '${name}' (its dataSource option): import ` +
        `TypeOrmModule.forRoot({ name: '${name}', ... }) in the application, or set dataSource to the name of a data ` +
        'source it has (leave it out for the default one).',
  invalidAttemptLimit: (name: string, value: unknown) =>
    `${name} must be a whole number of at least 1; got ${JSON.stringify(value)}.`,
  unsupportedTransport: (transport: string) =>
    `Messages of ${transport} carry no default idempotency key: set \`key\` to a payload path or a function.`,
  requeued: (pattern: string, attempt: number, maxAttempts: number, delayMs: number, reason: string) =>
    `Message on '${pattern}' failed (attempt ${attempt} of ${maxAttempts}) and is requeued in ${delayMs} ms: ${reason}`,
  autoAcknowledgedQueue: (queue: string, handler: string) =>
    `The RabbitMQ consumer of queue '${queue}' acknowledges messages on delivery (noAck: true, Nest's default), but ` +
    `${handler} is idempotent and the module acknowledges each message itself once it committed. Set noAck: false ` +
    'in the microservice options.',
  deadLettered: (pattern: string, reason: string) =>
    `Message on '${pattern}' was rejected to the dead-letter path: ${reason}`,
  settleFailed: (pattern: string, reason: string) =>
    `Could not settle a message on '${pattern}' with the broker (${reason}); it will be redelivered and answered as a duplicate.`,
  attemptsExhausted: (attempts: number, reason: string) => `it failed ${attempts} times; last error: ${reason}`,
  handlerNacked: (requeue: boolean) => `the handler answered Nack (requeue: ${requeue})`,
  golevelupHandlerUnsupported: (handler: string) =>
    `${handler} is idempotent, but only a @RabbitSubscribe handler without batchOptions can be: the module settles each ` +
    'message of a subscription itself. Remove @IdempotentHandler() or make it a plain @RabbitSubscribe handler.',
  golevelupAutoAcknowledged: (handler: string) =>
    `The subscription of ${handler} consumes with noAck: true, but ${handler} is idempotent and the module acknowledges ` +
    'each message itself once it committed. Remove noAck from queueOptions.consumerOptions.',
  golevelupAcksFailures: (handler: string) =>
    `The subscription of ${handler} acknowledges messages whose handling failed (errorBehavior ACK, ackErrorHandler, or ` +
    "the connection's defaultSubscribeErrorBehavior ACK): a message a guard or interceptor rejects before the claim would " +
    'be lost. Set errorBehavior to NACK (dead-letter) or REQUEUE on the subscription.',
  invalidScope: (name: string, value: unknown) =>
    `${name} must be a function of the execution context that returns the caller's identity, or false for a namespace ` +
    `shared by every caller; got ${typeof value === 'function' ? 'a function' : JSON.stringify(value)}.`,
  unscopedClientKey: (handler: string, consumer: string) =>
    `${handler} (${consumer}) is keyed by the client's Idempotency-Key header and has an authenticated caller, but no scope: ` +
    `two callers who send the same key share one record, and the second is answered the first one's response. Set ` +
    `\`scope: (context) => context.switchToHttp().getRequest().user.id\` on the handler (or the module's \`scope\`), or ` +
    `\`scope: false\` if one namespace for every caller is meant.`,
  adminAction: (action: string, consumer: string, key: string | undefined, actor: string, reason: string | undefined, result: string) =>
    `Admin ${action}${key === undefined ? '' : ` of ${shownKey(key)}`} for ${consumer} by ${actor}` +
    `${reason === undefined ? '' : ` (reason: ${reason})`}: ${result}.`,
  adminReasonMissing: (action: string) => `IdempotencyAdmin.${action}() needs a \`reason\`: it is logged and kept with the audit line.`,
  adminLiveLease: (consumer: string, key: string, expiresAt: Date) =>
    `${shownKey(key)} of ${consumer} is leased until ${expiresAt.toISOString()}: its handler may still be running. Release ` +
    `it with release(), wait for it to expire, or pass \`force: true\` to delete it anyway.`,
  adminStoreCannot: (store: string, action: string) =>
    `The lease store '${store}' has no ${action}: IdempotencyAdmin needs the store's optional inspect() and remove() ` +
    `(RedisLeaseStore has them), or a lease token to release with.`,
  adminUnknownStore: (store: string, known: readonly string[]) => `No lease store '${store}'; the module has ${known.join(', ')}.`,
  duplicate: (consumer: string, key: string, sender: string) =>
    `Duplicate of ${shownKey(key)} from ${sender} acknowledged for ${consumer} without running it again.`,
  invalidSenders: (value: unknown) =>
    `senders must map sender names to { redeliveryHorizon }, e.g. { payments: { redeliveryHorizon: '3d' } }; got ${JSON.stringify(value)}.`,
  invalidBatchSize: (value: unknown, max: number) =>
    `purge.batchSize must be a whole number from 1 to ${max} (each batch is one short transaction); got ${JSON.stringify(value)}.`,
  invalidDuplicateRate: (value: unknown) =>
    `health.maxDuplicateRate must be a share from 0 to 1, e.g. 0.05 for 5%; got ${JSON.stringify(value)}.`,
  invalidCount: (name: string, value: unknown) => `${name} must be a whole number above 0; got ${JSON.stringify(value)}.`,
  thresholdWithinPurgeInterval: (name: string, threshold: string, interval: string) =>
    `health.${name} (${threshold}) must be longer than purge.interval (${interval}), ` +
    `or the indicator turns down between two purges; raise health.${name} or shorten purge.interval.`,
  retentionTooShort: (handler: string, retention: string, sender: string, horizon: string) =>
    `${handler} keeps message ids for ${retention}, less than the redelivery horizon of its sender '${sender}' (${horizon}): ` +
    `a redelivery after ${retention} would be processed again. Set retention: '${horizon}' or longer on the handler.`,
  retentionTooShortForAnySender: (handler: string, retention: string, sender: string, horizon: string) =>
    `${handler} keeps message ids for ${retention} and chooses its sender per message, so it must outlast the longest ` +
    `redelivery horizon declared, that of '${sender}' (${horizon}). Set retention: '${horizon}' or longer on the handler.`,
  consumerConflict: (consumer: string, handlers: readonly string[], formerNames: readonly (string | undefined)[]) =>
    `${handlers.join(' and ')} claim the same consumer name '${consumer}', so each would skip the other's messages as ` +
    `duplicates. Give each its own name with @IdempotentHandler({ consumer })` +
    (formerNames.some(Boolean)
      ? `; to keep recognising the ids they processed before 0.3.0, use their former names (${formerNames.filter(Boolean).map((name) => `'${name}'`).join(', ')}).`
      : '.'),
  invalidFlag: (name: string, value: unknown) => `${name} must be true or false; got ${JSON.stringify(value)}.`,
  safeMethodUnsupported: (handler: string, method: string) =>
    `${handler} has @IdempotentHandler() on a ${method} route: a safe method needs no key, and a recorded answer would be ` +
    'replayed stale for the whole retention. Put @IdempotentHandler() on the POST, PUT, PATCH or DELETE routes that change state.',
  undeclaredSenders: (senders: readonly string[]) =>
    `Handlers name the senders ${senders.map((sender) => `'${sender}'`).join(', ')}, which the module's senders option does not declare, ` +
    'so their retention cannot be checked against the redelivery horizon: add senders: { <name>: { redeliveryHorizon } } for each.',
  legacyConsumers: (pairs: readonly (readonly [string, string])[]) =>
    `The store holds ids under the consumer names that handlers had before 0.3.0; each is still recognised while it holds any: ` +
    pairs.map(([consumer, legacy]) => `'${consumer}' (formerly '${legacy}')`).join(', ') + '.',
  unusedConsumers: (consumers: readonly string[], more: boolean) =>
    `The store holds ids of consumers that no handler of this application claims: ${consumers.map((name) => `'${name}'`).join(', ')}` +
    `${more ? ', and more' : ''}. A renamed handler would process their redeliveries again: give it its former name ` +
    "with @IdempotentHandler({ consumer }). (Set the module's warnOnUnusedConsumers: false where other applications share the table.)",
  legacyLeaseConsumer: (handler: string, consumer: string, legacy: string) =>
    `${handler} is a lease-mode handler whose ids are stored under its name before 0.3.0, '${legacy}', while it now claims '${consumer}'. ` +
    `Set @IdempotentHandler({ consumer: '${legacy}' }) on it so that its redeliveries are recognised.`,
  purged: (table: string, rows: number, batches: number, durationMs: number) =>
    `Purged ${rows} expired message ids from ${table} in ${batches} batches, ${durationMs} ms.`,
  purgeFailed: (table: string, rows: number) =>
    `The purge of expired message ids from ${table} failed after deleting ${rows}; the next run carries on.`,
  serverSentEventsUnsupported: (handler: string) =>
    `${handler} is an @Sse() stream, which cannot be recorded and replayed to duplicates: remove @IdempotentHandler() from it.`,
  notInController: (handler: string) =>
    `${handler} has @IdempotentHandler() but is neither a controller's method nor a handler of a supported ` +
    "message consumer (see the guide's transports): not GraphQL resolvers, WebSocket gateways or other providers.",
  providerNotEnlisted: (handler: string) =>
    `${handler} has @IdempotentHandler() and was called, but no IdempotencyModule (or IdempotencyTestingModule) of a ` +
    'running application enlisted its instance: import the module, and keep the provider singleton-scoped (not request-scoped).',
  unsupportedContext: (handler: string, type: string) =>
    `${handler} has @IdempotentHandler() and was called in a '${type}' context that no transport of the module reads: see the guide's transports.`,
  storeTooLarge: (estimatedRows: number, max: number) =>
    `The store holds about ${estimatedRows} message ids, more than health.maxEstimatedRows (${max}).`,
  purgeLagging: (lag: string, max: string) =>
    `The oldest expired message id expired ${lag} ago and is not purged yet, longer than health.maxPurgeLag (${max}).`,
  purgeOverdue: (since: string, max: string) =>
    `This instance's last successful purge (or its start) was ${since} ago, longer than health.maxTimeSincePurge (${max}).`,
  duplicateRateHigh: (sender: string, duplicates: number, deliveries: number, window: string, rate: string, max: string) =>
    `${duplicates} of ${deliveries} deliveries from '${sender}' in the last ${window} were duplicates (${rate}), ` +
    `more than health.maxDuplicateRate (${max}).`,
  storeUnreadable: (table: string, reason: string) => `The store ${table} could not be read: ${reason}`,
  invalidEncryption: () =>
    'encryption must be { keys: { <keyId>: <32-byte key> }, current: <keyId> }, e.g. ' +
    "{ keys: { k1: process.env.IDEMPOTENCY_KEY_K1 }, current: 'k1' } with a key made by `openssl rand -base64 32`.",
  invalidEncryptionKeyId: (keyId: string) =>
    `encryption.keys has the key id ${JSON.stringify(keyId)}; a key id is 1 to 64 letters, digits, '.', '_', ':' or '-' ` +
    "(it is stored with each record it seals, e.g. '2025-06' or 'k2').",
  invalidEncryptionKey: (keyId: string, got: string) =>
    `encryption.keys.${keyId} must be a 256-bit AES key: a Buffer of 32 bytes, or the base64 text of 32 bytes ` +
    `(\`openssl rand -base64 32\`); got ${got}.`,
  noEncryptionKeys: () => 'encryption.keys is empty: give at least the key of encryption.current.',
  unknownCurrentKey: (current: unknown, known: readonly string[]) =>
    `encryption.current is ${JSON.stringify(current)}, which is not a key id of encryption.keys ` +
    `(${known.map((id) => `'${id}'`).join(', ')}): new records are sealed with encryption.keys[encryption.current].`,
  recordUnreadable: (consumer: string, key: string, reason: string, keyId: string | null, version: number, configured: readonly string[]) =>
    `The recorded response of ${consumer} to '${key}' cannot be read, so it is not replayed (and the handler is not run again): ` +
    (reason === 'no-encryption'
      ? `it was sealed with the key '${keyId}', and the module has no encryption option. Configure encryption.keys with that key.`
      : reason === 'unknown-key'
        ? `it was sealed with the key '${keyId}', which is not in encryption.keys (${configured.map((id) => `'${id}'`).join(', ')}). ` +
          'Put that key back in encryption.keys while records sealed with it are kept (their retention).'
        : reason === 'not-authentic'
          ? `it did not authenticate under the key '${keyId}' of encryption.keys: the record was altered or moved from another ` +
            `consumer or key, or encryption.keys['${keyId}'] is not the key that sealed it.`
          : `it is sealed in format ${version}, which this version of nestjs-idempotent-consumer does not read; upgrade the module.`),
};

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** Milliseconds as seconds, for a reader: `4.2 s`, `0.35 s`. */
function seconds(milliseconds: number): string {
  return `${Number((milliseconds / 1000).toPrecision(2))} s`;
}
