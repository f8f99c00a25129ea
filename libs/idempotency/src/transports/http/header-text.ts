import { IdempotencyKeyError } from '../../errors/idempotency.errors.js';
import { IDEMPOTENCY_KEY_HEADER } from '../../idempotency.constants.js';
import { keyMessages } from '../../keys/key.messages.js';

const KEY_HEADER = IDEMPOTENCY_KEY_HEADER.toLowerCase();

// eslint-disable-next-line no-control-regex
const NON_ASCII = /[^\u0000-\u007f]/;

/** Refuses bytes that are not UTF-8 instead of replacing them; keeps a leading byte order mark as a character. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * A request header's value as the text the client sent, read as UTF-8. Node hands header values
 * over as Latin-1 (one character per byte), so a key the client wrote as `café-1` arrives as
 * `cafÃ©-1`: its bytes are decoded again, as UTF-8. ASCII is the same in both and passes as it is;
 * anything that is not a string (a missing header) too, for the key's own checks.
 * @param source Where the value was read, for the error message (`the Idempotency-Key header`).
 * @throws IdempotencyKeyError when the bytes are not UTF-8.
 * @internal
 */
export function headerText(value: unknown, source: string): unknown {
  if (typeof value !== 'string' || !NON_ASCII.test(value)) {
    return value;
  }
  try {
    return UTF8.decode(Buffer.from(value, 'latin1'));
  } catch {
    throw new IdempotencyKeyError(keyMessages.textNotUtf8('idempotency key', source), source);
  }
}

/** What `requestHeaderText` reads of a request: Node's headers (lower-case names) and its raw lines. */
export interface HeaderSource {
  readonly headers?: Record<string, string | string[] | undefined>;
  readonly rawHeaders?: string[];
  /** Fastify's request: Node's request, whose raw lines these are. */
  readonly raw?: { readonly rawHeaders?: string[] };
}

/**
 * The value of the request header `name` (lower-case) as `headerText` reads it, refusing a header
 * sent more than once: Node joins its lines into one value with ', ', which is no key the client
 * sent (the draft defines one value).
 * @throws IdempotencyKeyError when the header came in several lines, or its bytes are not UTF-8.
 * @internal
 */
export function requestHeaderText(request: HeaderSource | undefined, name: string, source: string): unknown {
  const value = request?.headers?.[name];
  // Only a joined value holds ', ': count its lines only then.
  if (typeof value === 'string' && value.includes(',')) {
    const lines = headerLines(request?.rawHeaders ?? request?.raw?.rawHeaders ?? [], name);
    if (lines > 1) {
      throw new IdempotencyKeyError(keyMessages.textRepeated('idempotency key', source, lines), source);
    }
  }
  return headerText(value, source);
}

/**
 * A key in the request header `name` (lower-case), as `requestHeaderText` reads it. The
 * `Idempotency-Key` header's value is, as the IETF draft defines it, a Structured Field string
 * (RFC 8941: `"8e03978e-..."`): the key is what the quotes hold, its escapes (`\"`, `\\`)
 * undone. A value that does not start with a double quote is the key as it is (a bare token, as
 * clients sent it before), so `"k1"` and `k1` are one key.
 * @throws IdempotencyKeyError as `requestHeaderText` does, and when a quoted `Idempotency-Key` is
 * no sf-string: no closing quote, anything after it (parameters too), a character outside
 * printable ASCII, or a backslash before anything but `"` or `\`.
 * @internal
 */
export function requestKeyHeader(request: HeaderSource | undefined, name: string, source: string): unknown {
  const value = requestHeaderText(request, name, source);
  return name === KEY_HEADER && typeof value === 'string' && value.startsWith('"') ? structuredString(value, source) : value;
}

/** The text of the sf-string `value` (RFC 8941, section 4.2.5), which starts with its opening quote. */
function structuredString(value: string, source: string): string {
  let text = '';
  for (let index = 1; index < value.length; index++) {
    const character = value[index];
    if (character === '"') {
      if (index === value.length - 1) {
        return text;
      }
      break;
    }
    if (character === '\\') {
      const escaped = value[++index];
      if (escaped !== '"' && escaped !== '\\') {
        break;
      }
      text += escaped;
    } else if (character < ' ' || character > '~') {
      break;
    } else {
      text += character;
    }
  }
  throw new IdempotencyKeyError(keyMessages.textNotStructuredString('idempotency key', source), source);
}

/** How many lines of `rawHeaders` carry the header `name` (lower-case). */
function headerLines(rawHeaders: string[], name: string): number {
  let lines = 0;
  for (let index = 0; index < rawHeaders.length; index += 2) {
    if (rawHeaders[index].length === name.length && rawHeaders[index].toLowerCase() === name) {
      lines++;
    }
  }
  return lines;
}
