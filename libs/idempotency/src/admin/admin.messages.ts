import { shownKey } from '../errors/error.messages.js';

/** The message texts of IdempotencyAdmin and OutboxAdmin. */
export const adminMessages = {
  adminAction: (action: string, consumer: string, key: string | undefined, actor: string, reason: string | undefined, result: string) =>
    `Admin ${action}${key === undefined ? '' : ` of ${shownKey(key)}`} for ${consumer} by ${actor}` +
    `${reason === undefined ? '' : ` (reason: ${reason})`}: ${result}.`,
  adminReasonMissing: (method: string) => `${method}() needs a \`reason\`: it is logged and kept with the audit line.`,
  adminLimit: (method: string, max: number, got: unknown) => `${method}() takes a limit of 1 to ${max}; got ${String(got)}.`,
  adminIdsMissing: (method: string) => `${method}() takes \`ids\`, an array of message ids.`,
  adminLiveLease: (consumer: string, key: string, expiresAt: Date) =>
    `${shownKey(key)} of ${consumer} is leased until ${expiresAt.toISOString()}: its handler may still be running. Release ` +
    `it with release(), wait for it to expire, or pass \`force: true\` to delete it anyway.`,
  adminStoreCannot: (store: string, action: string) =>
    `The lease store '${store}' has no ${action}: IdempotencyAdmin needs the store's optional inspect() and remove() ` +
    `(RedisLeaseStore has them), or a lease token to release with.`,
  adminResponseUnreadable: (consumer: string, key: string, cause: string) =>
    `The recorded response of ${consumer} to ${shownKey(key)} cannot be opened, so lookup() returns no headers and no body: ${cause}`,
  adminOutboxFilter: (name: string, rule: string, value: unknown) => `OutboxAdmin: the outbox's \`${name}\` must be ${rule}; got ${JSON.stringify(value)?.slice(0, 100)}.`,
  adminUnknownStore: (store: string, known: readonly string[]) => `No lease store '${store}'; the module has ${known.join(', ')}.`,
};
