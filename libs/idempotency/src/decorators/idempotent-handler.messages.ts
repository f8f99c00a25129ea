/** The message texts of @IdempotentHandler()'s options. */
export const handlerMessages = {
  invalidFingerprint: (handler: string, value: unknown) =>
    `fingerprint of ${handler} must be a function of the execution context or false; got ${JSON.stringify(value)}.`,
  invalidAttemptLimit: (name: string, value: unknown) =>
    `${name} must be a whole number of at least 1; got ${JSON.stringify(value)}.`,
  invalidRunConsumer: (value: unknown) =>
    `run() takes a consumer: a stable name of 1 to 255 characters for the work (a job's name, a command's type); got ${JSON.stringify(value)}.`,
  classWithoutMutations: (className: string) =>
    `@IdempotentHandler() on the class ${className} applies to its routes of @Post(), @Put(), @Patch() or @Delete() and its ` +
    '@Mutation()s, and it has none. Put @IdempotentHandler() on the handlers to make idempotent (a message pattern, say), or remove it from the class.',
  optionalKeyNotHttp: (handler: string) =>
    `${handler} sets required: false, but it is no HTTP route nor GraphQL mutation: a message without a key would run unclaimed, ` +
    'and its broker would not be told whether it was processed. Remove required: false; give the handler a key it always finds (key: ...).',
};
