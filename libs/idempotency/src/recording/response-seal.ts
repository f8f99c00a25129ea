import { createCipheriv, createDecipheriv, type KeyObject, randomBytes } from 'node:crypto';
import type { RecordedResponse } from '../claiming/claim.js';

/**
 * The keys that seal recorded responses: every configured key by its id, and the one new
 * records are sealed with.
 * @internal
 */
export interface Keyring {
  readonly current: string;
  readonly keys: ReadonlyMap<string, KeyObject>;
}

/**
 * Whose record a response is: authenticated with it, so a sealed record cannot be moved to another message.
 * @internal
 */
export interface RecordOwner {
  readonly consumer: string;
  readonly key: string;
}

/**
 * Why a sealed record cannot be opened:
 * - `no-encryption`: the module has no `encryption` option;
 * - `unknown-key`: its key id is not in `encryption.keys`;
 * - `not-authentic`: AES-GCM refused it (altered, moved from another consumer or key, or the
 *   configured key of that id is not the one that sealed it);
 * - `unknown-format`: written by a newer version of the module, or truncated.
 */
export type UnreadableReason = 'no-encryption' | 'unknown-key' | 'not-authentic' | 'unknown-format';

/**
 * A sealed record that could not be opened.
 * @internal
 */
export class UnreadableRecord {
  constructor(
    readonly reason: UnreadableReason,
    /** The key id the record names; null when the format could not be read. */
    readonly keyId: string | null,
    readonly formatVersion: number,
  ) {}
}

/**
 * The first byte of a sealed body. A response recorded in plaintext with `headers` null is a
 * message handler's reply, JSON text, which never begins with a NUL byte; an HTTP response is
 * recorded with its headers (an object, maybe empty). So a record is sealed exactly when its
 * headers are null and its body begins with this byte.
 */
const SEALED_MARKER = 0x00;
/** The format this version writes. */
const FORMAT_VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Marker, version and the key id's length. */
const PREFIX_BYTES = 3;
/** Domain separation of the additional authenticated data. */
const AAD_LABEL = Buffer.from('nestjs-idempotent-consumer:recorded-response', 'utf8');
const HAS_HEADERS = 0b01;
const HAS_BODY = 0b10;
const ALGORITHM = 'aes-256-gcm';

/**
 * Whether `stored` is a sealed record (of any format version).
 * @internal
 */
export function isSealed(stored: RecordedResponse): boolean {
  return stored.headers === null && stored.body !== null && stored.body.length > 1 && stored.body[0] === SEALED_MARKER;
}

/**
 * Seals `response` with the keyring's current key: its headers and body become one AES-256-GCM
 * ciphertext in `body` (format 1: marker, version, key id, 96-bit random IV, 128-bit tag,
 * ciphertext), `headers` null. The status stays readable, and is authenticated with the format,
 * the key id, the consumer and the key. A response with neither headers nor body is left as it is.
 * @internal
 */
export function sealResponse(keyring: Keyring, owner: RecordOwner, response: RecordedResponse): RecordedResponse {
  if (response.headers === null && response.body === null) {
    return response;
  }
  const keyId = Buffer.from(keyring.current, 'utf8');
  const prefix = Buffer.from([SEALED_MARKER, FORMAT_VERSION, keyId.length]);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, keyring.keys.get(keyring.current) as KeyObject, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(additionalData(prefix, keyId, owner, response.status));
  const ciphertext = Buffer.concat([cipher.update(plaintextOf(response)), cipher.final()]);
  return { status: response.status, headers: null, body: Buffer.concat([prefix, keyId, iv, cipher.getAuthTag(), ciphertext]) };
}

/**
 * The response as it was recorded: a plaintext record as it is (those written before encryption
 * was turned on, or with it off), a sealed one opened with the key its id names.
 * @returns an UnreadableRecord when no configured key can open it; never a response it cannot authenticate.
 * @internal
 */
export function openResponse(keyring: Keyring | null, owner: RecordOwner, stored: RecordedResponse): RecordedResponse | UnreadableRecord {
  if (!isSealed(stored)) {
    return stored;
  }
  const sealed = stored.body as Buffer;
  const version = sealed[1];
  const ivStart = ivStartOf(sealed);
  if (ivStart === null) {
    return new UnreadableRecord('unknown-format', null, version);
  }
  const keyIdBytes = sealed.subarray(PREFIX_BYTES, ivStart);
  const keyId = keyIdBytes.toString('utf8');
  if (keyring === null) {
    return new UnreadableRecord('no-encryption', keyId, version);
  }
  const key = keyring.keys.get(keyId);
  if (key === undefined) {
    return new UnreadableRecord('unknown-key', keyId, version);
  }
  const tagStart = ivStart + IV_BYTES;
  const decipher = createDecipheriv(ALGORITHM, key, sealed.subarray(ivStart, tagStart), { authTagLength: TAG_BYTES });
  decipher.setAAD(additionalData(sealed.subarray(0, PREFIX_BYTES), keyIdBytes, owner, stored.status));
  decipher.setAuthTag(sealed.subarray(tagStart, tagStart + TAG_BYTES));
  let plaintext: Buffer;
  try {
    plaintext = Buffer.concat([decipher.update(sealed.subarray(tagStart + TAG_BYTES)), decipher.final()]);
  } catch {
    return new UnreadableRecord('not-authentic', keyId, version);
  }
  return responseOf(stored.status, plaintext);
}

/**
 * The id of the key that sealed `stored`, as the record names it; null for a plaintext record or
 * one in a format this version does not read. It says nothing of whether that key opens it.
 * @internal
 */
export function sealingKeyId(stored: RecordedResponse): string | null {
  if (!isSealed(stored)) {
    return null;
  }
  const sealed = stored.body as Buffer;
  const ivStart = ivStartOf(sealed);
  return ivStart === null ? null : sealed.subarray(PREFIX_BYTES, ivStart).toString('utf8');
}

/** Where a sealed body's IV starts, after its prefix and key id; null when the format is not this version's or the body is cut short. */
function ivStartOf(sealed: Buffer): number | null {
  const keyIdLength = sealed.length > 2 ? sealed[2] : 0;
  const ivStart = PREFIX_BYTES + keyIdLength;
  return sealed[1] !== FORMAT_VERSION || keyIdLength === 0 || sealed.length < ivStart + IV_BYTES + TAG_BYTES ? null : ivStart;
}

/** Flags, the headers' JSON length (32 bits), the headers' JSON, the body. */
function plaintextOf({ headers, body }: RecordedResponse): Buffer {
  const headersJson = Buffer.from(headers === null ? '' : JSON.stringify(headers), 'utf8');
  const head = Buffer.alloc(5);
  head[0] = (headers === null ? 0 : HAS_HEADERS) | (body === null ? 0 : HAS_BODY);
  head.writeUInt32BE(headersJson.length, 1);
  return Buffer.concat([head, headersJson, body ?? Buffer.alloc(0)]);
}

function responseOf(status: number | null, plaintext: Buffer): RecordedResponse {
  const flags = plaintext[0];
  const headersEnd = 5 + plaintext.readUInt32BE(1);
  return {
    status,
    headers: flags & HAS_HEADERS ? (JSON.parse(plaintext.subarray(5, headersEnd).toString('utf8')) as RecordedResponse['headers']) : null,
    body: flags & HAS_BODY ? Buffer.from(plaintext.subarray(headersEnd)) : null,
  };
}

/** The label, the record's prefix and key id, the consumer, the key and the status, each length-prefixed where it varies. */
function additionalData(prefix: Buffer, keyId: Buffer, owner: RecordOwner, status: number | null): Buffer {
  const consumer = Buffer.from(owner.consumer, 'utf8');
  const key = Buffer.from(owner.key, 'utf8');
  const lengths = Buffer.alloc(12);
  lengths.writeUInt32BE(consumer.length, 0);
  lengths.writeUInt32BE(key.length, 4);
  lengths.writeInt32BE(status ?? -1, 8);
  return Buffer.concat([AAD_LABEL, prefix, keyId, lengths, consumer, key]);
}
