import { createSecretKey, type KeyObject } from 'node:crypto';
import type { RecordPolicy } from '../options/handler-values.js';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { optionValueMessages } from '../options/option-values.messages.js';
import { recordingMessages } from './recording.messages.js';
import type { Keyring } from './response-seal.js';

/**
 * The keys that seal recorded responses. To rotate: add the new key, make it `current`, restart
 * every instance; remove the old key once the records it sealed have expired (the longest
 * retention after the rotation), since records it sealed cannot be replayed without it.
 */
export interface EncryptionOptions {
  /**
   * Every key that may open a record, by key id (1 to 64 letters, digits, `.`, `_`, `:`, `-`;
   * stored with each record): 32 bytes, as a Buffer or as base64 text (`openssl rand -base64 32`).
   */
  keys: Record<string, Buffer | Uint8Array | string>;
  /** The id of the key in `keys` that seals new records. */
  current: string;
}

/**
 * The choices of `record`.
 * @internal
 */
/** The token of the recording's slice of the module's options. @internal */
export const RECORDING_OPTIONS = Symbol('IDEMPOTENCY:RECORDING_OPTIONS');

/**
 * The recording's slice of the module's options.
 * @internal
 */
export interface ResolvedRecordingOptions {
  /** null: responses are recorded in plaintext. */
  keyring: Keyring | null;
}

export const RECORD_POLICIES: readonly RecordPolicy[] = ['response', 'status'];

/**
 * `value` as a record policy. @throws IdempotencyOptionsError naming `name`.
 * @internal
 */
export function toRecordPolicy(name: string, value: unknown): RecordPolicy {
  if (!RECORD_POLICIES.includes(value as RecordPolicy)) {
    throw new IdempotencyOptionsError(optionValueMessages.invalidChoice(name, value, RECORD_POLICIES));
  }
  return value as RecordPolicy;
}

/**
 * `value` as the set of error statuses to record: whole numbers from 400 to 499, and from 500 to
 * 599 where `serverErrors` allows them (a handler's own list, never the module's default).
 * @throws IdempotencyOptionsError naming `name`, saying why a 5xx is not a default.
 * @internal
 */
export function toRecordedErrors(name: string, value: unknown, serverErrors: boolean): ReadonlySet<number> {
  if (!Array.isArray(value) || !value.every((status) => Number.isInteger(status))) {
    throw new IdempotencyOptionsError(recordingMessages.invalidRecordedErrors(name, value));
  }
  const serverError = (value as number[]).find((status) => status >= 500 && status <= 599);
  if (serverError !== undefined && !serverErrors) {
    throw new IdempotencyOptionsError(recordingMessages.serverErrorRecorded(name, serverError));
  }
  if (!(value as number[]).every((status) => status >= 400 && status <= 599)) {
    throw new IdempotencyOptionsError(recordingMessages.invalidRecordedErrors(name, value));
  }
  return new Set(value as number[]);
}

const KEY_ID = /^[A-Za-z0-9._:-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;
const AES_256_KEY_BYTES = 32;

/**
 * The keys of `encryption`, checked and read. @throws IdempotencyOptionsError
 * @internal
 */
export function resolveKeyring(encryption: EncryptionOptions): Keyring {
  const { keys, current } = (encryption ?? {}) as Partial<EncryptionOptions>;
  if (typeof keys !== 'object' || keys === null || Array.isArray(keys)) {
    throw new IdempotencyOptionsError(recordingMessages.invalidEncryption());
  }
  const resolved = new Map<string, KeyObject>();
  for (const [keyId, key] of Object.entries(keys)) {
    if (!KEY_ID.test(keyId)) {
      throw new IdempotencyOptionsError(recordingMessages.invalidEncryptionKeyId(keyId));
    }
    resolved.set(keyId, toAesKey(keyId, key));
  }
  if (resolved.size === 0) {
    throw new IdempotencyOptionsError(recordingMessages.noEncryptionKeys());
  }
  if (typeof current !== 'string' || !resolved.has(current)) {
    throw new IdempotencyOptionsError(recordingMessages.unknownCurrentKey(current, [...resolved.keys()]));
  }
  return { current, keys: resolved };
}

/** A 256-bit key from a Buffer or base64 text; the error says what was given without showing it. */
function toAesKey(keyId: string, key: unknown): KeyObject {
  let bytes: Buffer;
  if (key instanceof Uint8Array) {
    bytes = Buffer.from(key);
  } else if (typeof key === 'string') {
    if (!BASE64.test(key)) {
      throw new IdempotencyOptionsError(recordingMessages.invalidEncryptionKey(keyId, `a string of ${key.length} characters that is not base64`));
    }
    bytes = Buffer.from(key, 'base64');
  } else {
    throw new IdempotencyOptionsError(recordingMessages.invalidEncryptionKey(keyId, key === undefined || key === null ? String(key) : `a ${typeof key}`));
  }
  if (bytes.length !== AES_256_KEY_BYTES) {
    throw new IdempotencyOptionsError(recordingMessages.invalidEncryptionKey(keyId, `${bytes.length} bytes`));
  }
  return createSecretKey(bytes);
}
