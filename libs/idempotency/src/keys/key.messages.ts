import { MAX_KEY_LENGTH } from '../idempotency.constants.js';

/** The message texts of idempotency keys and their scope. */
export const keyMessages = {
  textMissing: (what: string, source: string) => `The message has no ${what}: ${source} is missing.`,
  textNotString: (what: string, source: string) => `The ${what} (${source}) must be a string or a number.`,
  textEmpty: (what: string, source: string) => `The ${what} (${source}) is empty.`,
  textTooLong: (what: string, source: string, length: number) =>
    `The ${what} (${source}) is ${length} characters long; at most ${MAX_KEY_LENGTH} are accepted.`,
  textRepeated: (what: string, source: string, count: number) =>
    `The ${what} (${source}) came ${count} times in one request; it takes exactly one value ` +
    '(as the IETF Idempotency-Key draft defines): send the header once.',
  textHasControlCharacters: (what: string, source: string) => `The ${what} (${source}) contains control characters.`,
  textNotUtf8: (what: string, source: string) =>
    `The ${what} (${source}) is not UTF-8 text: send its characters encoded as UTF-8 (ASCII is UTF-8 too).`,
  textNotStructuredString: (what: string, source: string) =>
    `The ${what} (${source}) starts with a double quote but is no Structured Field string (RFC 8941), as the IETF ` +
    'Idempotency-Key draft writes it: send it as "..." with printable ASCII characters inside, \\" and \\\\ escaped, and nothing after the ' +
    'closing quote; or send the key bare, without quotes.',
  invalidKeySource: (name: string, value: unknown) =>
    `${name} must be { header: 'Name' }, { body: 'path' }, a function of the execution context, or a non-empty list of them; ` +
    `got ${typeof value === 'function' ? 'a function' : JSON.stringify(value)}.`,
  scopeUnanswered: (answer: unknown) =>
    `The scope function answered ${String(answer)} for this message, so whose message it is cannot be told, and it is refused. ` +
    'A message handler\'s scope must name its owner (a tenant id in its payload, say): fix the sender, or set scope: false ' +
    'on the handler for one namespace shared by every sender.',
  invalidScope: (name: string, value: unknown) =>
    `${name} must be a function of the execution context that returns the caller's identity, or false for a namespace ` +
    `shared by every caller; got ${typeof value === 'function' ? 'a function' : JSON.stringify(value)}.`,
};
