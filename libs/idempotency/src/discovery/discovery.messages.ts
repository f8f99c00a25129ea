/** What a handler keyed by the client's key without a scope is told to do. */
export const UNSCOPED_CLIENT_KEY_ADVICE =
  "two callers who send the same key share one record, and the second is answered the first one's response. Set " +
  "`scope: (context) => context.switchToHttp().getRequest().user?.id` on the handler (or the module's `scope`; a caller " +
  'who is not signed in is then an anonymous one), or `scope: false` if one namespace for every caller is meant.';

/** The message texts of the start-up checks of the handlers. */
export const discoveryMessages = {
  invalidSenders: (value: unknown) =>
    `senders must map sender names to { redeliveryHorizon }, e.g. { payments: { redeliveryHorizon: '3d' } }; got ${JSON.stringify(value)}.`,
  invalidKnownConsumers: (value: unknown) =>
    `knownConsumers must list consumer names (non-empty texts), e.g. ['settle-day']; got ${JSON.stringify(value)}.`,
  unknownStore: (handler: string, store: string, known: readonly string[]) =>
    `${handler} uses the lease store '${store}', which is not configured; the stores are ${known.map((name) => `'${name}'`).join(', ')}. ` +
    `Add it to the module's stores: { ${store}: ... }.`,
  transactionalModeNeedsPostgres: (handler: string, store: string) =>
    `${handler} runs in the transactional mode, which claims in the handler's PostgreSQL transaction, but its store is '${store}'. ` +
    "Set mode: 'lease' to use that store, or store: 'postgres'.",
  retentionTooShort: (handler: string, retention: string, sender: string, horizon: string) =>
    `${handler} keeps message ids for ${retention}, less than the redelivery horizon of its sender '${sender}' (${horizon}): ` +
    `a redelivery after ${retention} would be processed again. Set retention: '${horizon}' or longer on the handler.`,
  retentionTooShortForAnySender: (handler: string, retention: string, sender: string, horizon: string) =>
    `${handler} keeps message ids for ${retention} and chooses its sender per message, so it must outlast the longest ` +
    `redelivery horizon declared, that of '${sender}' (${horizon}). Set retention: '${horizon}' or longer on the handler.`,
  sharedConsumerMismatch: (consumer: string, handlers: readonly string[]) =>
    `${handlers.join(' and ')} share the consumer '${consumer}' but claim it differently: handlers of one consumer need the same mode and store.`,
  safeMethodUnsupported: (handler: string, method: string) =>
    `${handler} has @IdempotentHandler() on a ${method} route: a safe method needs no key, and a recorded answer would be ` +
    'replayed stale for the whole retention. Put @IdempotentHandler() on the POST, PUT, PATCH or DELETE routes that change state.',
  undeclaredSenders: (senders: readonly string[]) =>
    `Handlers name the senders ${senders.map((sender) => `'${sender}'`).join(', ')}, which the module's senders option does not declare, ` +
    'so their retention cannot be checked against the redelivery horizon: add senders: { <name>: { redeliveryHorizon } } for each.',
  legacyConsumersMoved: (moves: readonly (readonly [string, string, number])[]) =>
    'Ids stored under the names handlers had before 0.3.0 now belong to their current names, so that renaming a class or a method ' +
    'loses none of them: ' +
    moves.map(([consumer, legacy, count]) => `${count} moved from '${legacy}' to '${consumer}'`).join(', ') +
    '. Until this process stops, their claims also recognise ids an instance of an earlier version stores under the former name.',
  unusedConsumers: (consumers: readonly string[], more: boolean) =>
    `The store holds ids of consumers that no handler of this application claims: ${consumers.map((name) => `'${name}'`).join(', ')}` +
    `${more ? ', and more' : ''}. A handler whose consumer name changed would process their redeliveries again. ` +
    "If they are a handler's ids under a former `consumer`, or under its default name before 0.3.0 ('Class.method') and its class or " +
    "method was renamed before this version first started, move them to its current name (see 'Stable consumer names' on the guide's page docs/keys.md). " +
    "If they are claimed elsewhere (the consumers of IdempotentRunner.run(), another application's handlers on the same table), " +
    "list them in the module's knownConsumers option.",
  legacyLeaseHeld: (handler: string, consumer: string, legacy: string) =>
    `${handler} is a lease-mode handler with ids stored under its name before 0.3.0, '${legacy}'. They were moved to '${consumer}', ` +
    'except those an instance of an earlier version holds under a live lease right now, which a lease claim under the new name ' +
    'would not see. Start again once those deliveries have ended (at most their lease), or stop the instances of the earlier version first.',
  unscopedGuardedClientKey: (handler: string, consumer: string, guards: readonly string[]) =>
    `${handler} (${consumer}) is keyed by the client's Idempotency-Key header and guarded by ${guards.join(', ')}, but has no scope: ` +
    UNSCOPED_CLIENT_KEY_ADVICE,
  serverSentEventsUnsupported: (handler: string) =>
    `${handler} is an @Sse() stream, which cannot be recorded and replayed to duplicates: remove @IdempotentHandler() from it.`,
  notInController: (handler: string) =>
    `${handler} has @IdempotentHandler() but is neither a controller's method nor a handler of a supported ` +
    "message consumer or a GraphQL mutation (see the guide's page docs/transports.md): not WebSocket gateways or other providers.",
  providerRequestScoped: (handler: string) =>
    `${handler} has @IdempotentHandler() but its provider is request-scoped (or depends on one), so its framework calls ` +
    'instances the module cannot enlist, and every call would be refused: make it and its dependencies singleton-scoped.',
};
