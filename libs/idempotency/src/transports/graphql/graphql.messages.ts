/** The message texts of the GraphQL entry's start-up checks. */
export const graphqlMessages = {
  notAMutation: (handler: string, type: string | undefined) =>
    `${handler} has @IdempotentHandler() on a GraphQL ${type === 'Query' || type === 'Subscription' ? type.toLowerCase() : 'field resolver'}: ` +
    'only a @Mutation() changes state, so only a mutation can be made idempotent. Remove @IdempotentHandler() from it.',
  statusNotRecorded: (handler: string) =>
    `${handler} is a GraphQL mutation with record: 'status', which keeps no result to give its duplicates: ` +
    "remove record: 'status' (a mutation's result is recorded as JSON and replayed).",
  statusNotRecordedByModule: (handler: string) =>
    `IdempotencyModule's record: 'status' applies to ${handler}, a GraphQL mutation, which then keeps no result to give its duplicates: ` +
    "set record: 'response' in its @IdempotentHandler() (a mutation's result is recorded and replayed), or remove record: 'status' from the module's options.",
  cyclicResult: (handler: string, type: string) =>
    `${handler} answered a ${type} that contains itself: a GraphQL mutation's result is recorded whole, every field of every object, ` +
    'so it cannot hold a cycle. Answer the mutation with an object without back-references (a plain copy of the entity).',
  requestScoped: (handler: string) =>
    `${handler} has @IdempotentHandler() but its resolver is request-scoped (or depends on one), and the module enlists ` +
    'only the singleton instance, so every call would be refused: make it and its dependencies singleton-scoped.',
};
