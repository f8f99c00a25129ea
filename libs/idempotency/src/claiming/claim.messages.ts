import { shownKey } from '../keys/scoped-key.js';

/** The message texts of the claim and its transaction. */
export const claimMessages = {
  noConnection: (consumer: string, key: string, timeoutMs: number, pool: { size?: number; waiting?: number }) =>
    `No database connection came within ${timeoutMs} ms for ${shownKey(key)} (${consumer})` +
    (pool.size === undefined ? '' : `: all ${pool.size} connections of the pool were busy, ${pool.waiting ?? 0} requests waiting`) +
    '. Nothing was claimed; retry. Size the pool for the handlers that run at once, or raise connectionTimeout.',
  connectionLost: (consumer: string, key: string, reason: string) =>
    `The database connection of the claim of ${shownKey(key)} (${consumer}) was lost before the claim committed (${reason}): ` +
    "the claim's transaction was lost with it and nothing was committed, the claim included; a retry processes the message anew.",
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
  transient: (key: string, code: string) =>
    `The database aborted the transaction of ${shownKey(key)} (PostgreSQL ${code}); nothing was committed, retry.`,
  claimVanished: (key: string) =>
    `The claim of ${shownKey(key)} disappeared while it was being read (purged concurrently); retry.`,
  duplicate: (consumer: string, key: string, sender: string) =>
    `Duplicate of ${shownKey(key)} from ${sender} acknowledged for ${consumer} without running it again.`,
};
