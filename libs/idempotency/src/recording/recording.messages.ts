/** The message texts of recorded responses and their encryption. */
export const recordingMessages = {
  invalidRecordedErrors: (name: string, value: unknown) =>
    `${name} must be a list of error statuses, from 400 to 599 (a 5xx on a handler only), e.g. [402, 403]; got ${JSON.stringify(value)}.`,
  serverErrorRecorded: (name: string, status: number) =>
    `${name} lists ${status}, a server error: a 5xx usually says the server failed, and a retry may succeed, so no handler ` +
    'records one by default (a recorded 5xx is replayed for the whole retention). Remove it; list a 5xx in the recordErrors ' +
    'of the handler whose 5xx is final (a provider that said no for good), e.g. @IdempotentHandler({ recordErrors: [502] }).',
  recordErrorsInLeaseMode: (handler: string) =>
    `${handler} sets recordErrors in lease mode: a refusal is recorded with the handler's work rolled back to a savepoint of ` +
    "the claim's transaction, and a lease-mode handler's work is outside it. Remove recordErrors, or use mode: 'transaction'.",
  recordErrorsNotHttp: (handler: string) =>
    `${handler} sets recordErrors, which records HTTP error answers, but it is not an HTTP route. Remove recordErrors.`,
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
};
