import { shownKey } from '../keys/scoped-key.js';

/** The message texts of the claim and its transaction. */
export const claimMessages = {
  connectionLost: (consumer: string, key: string, reason: string) =>
    `The database connection of the claim of ${shownKey(key)} (${consumer}) was lost before the claim committed (${reason}): ` +
    "the claim's transaction was lost with it and nothing was committed, the claim included; a retry processes the message anew.",
  transient: (key: string, code: string) =>
    `The database aborted the transaction of ${shownKey(key)} (${code}); nothing was committed, retry.`,
  claimVanished: (key: string) =>
    `The claim of ${shownKey(key)} disappeared while it was being read (purged concurrently); retry.`,
  duplicate: (consumer: string, key: string, sender: string) =>
    `Duplicate of ${shownKey(key)} from ${sender} acknowledged for ${consumer} without running it again.`,
};
