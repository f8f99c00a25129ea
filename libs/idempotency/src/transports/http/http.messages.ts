import { UNSCOPED_CLIENT_KEY_ADVICE } from '../../discovery/discovery.messages.js';
import { shownKey } from '../../keys/scoped-key.js';

/** The message texts of the HTTP transport and its replays. */
export const httpMessages = {
  invalidBodyLimit: (value: unknown, max: number) =>
    `replay.maxBodyBytes must be a whole number of bytes from 1 to ${max}; got ${JSON.stringify(value)}.`,
  invalidExcludedHeaders: (value: unknown) =>
    `replay.excludeHeaders must be a list of header names, e.g. ['x-request-id']; got ${JSON.stringify(value)}.`,
  responseTooLarge: (handler: string, consumer: string, bytes: number, maxBodyBytes: number) =>
    `${handler} (${consumer}) answered a body of ${bytes} bytes, larger than replay.maxBodyBytes (${maxBodyBytes} bytes): it was ` +
    'sent and committed, but not recorded, so its duplicates are answered 500 response-too-large instead of it. Raise ' +
    'replay.maxBodyBytes (up to 64 MiB) to replay such answers, or answer with less (an id and a link to the content). ' +
    'Said once per handler.',
  unrecordedResponse: (consumer: string, key: string) =>
    `${shownKey(key)} was committed for ${consumer} without its response: its handler ended the claim's transaction itself, ` +
    'so this duplicate cannot be answered with what the first delivery was sent.',
  commitUnsettled: (key: string, reason: string) =>
    `The commit of ${shownKey(key)} did not complete (${reason}). Retry: if it did commit, the retry is answered with its response.`,
  unscopedClientKey: (handler: string, consumer: string) =>
    `${handler} (${consumer}) is keyed by the client's Idempotency-Key header and has an authenticated caller, but no scope: ` +
    UNSCOPED_CLIENT_KEY_ADVICE,
  anonymousCaller: (handler: string, consumer: string, key: string) =>
    `${handler} (${consumer}): the scope function answered nothing (no signed-in caller), so the key '${key}' is claimed ` +
    'in the namespace of anonymous callers.',
};
