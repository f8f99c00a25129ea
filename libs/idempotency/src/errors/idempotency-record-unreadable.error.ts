import { errorMessages } from './error.messages.js';
import { IdempotencyError } from './idempotency.error.js';

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
 * A duplicate's recorded response is sealed (the module's `encryption` option) and no configured
 * key can open it: its key id is not in `encryption.keys` (`reason: 'unknown-key'`), the module
 * has no `encryption` option (`'no-encryption'`), AES-GCM refused it (`'not-authentic'`: altered,
 * moved from another message, or the key of that id holds other bytes), or it is in a format this
 * version does not read (`'unknown-format'`). The handler is not run again (the message was
 * processed) and nothing is replayed: HTTP answers 500 problem+json `record-unreadable`; a broker
 * message is retried, then dead-lettered. Put the key back in `encryption.keys` to replay it.
 */
export class IdempotencyRecordUnreadableError extends IdempotencyError {
  override readonly name = 'IdempotencyRecordUnreadableError';

  constructor(
    readonly consumer: string,
    readonly key: string,
    readonly reason: UnreadableReason,
    /** The key id the record was sealed with; null when its format could not be read. */
    readonly keyId: string | null,
    formatVersion: number,
    configuredKeyIds: readonly string[],
  ) {
    super(errorMessages.recordUnreadable(consumer, key, reason, keyId, formatVersion, configuredKeyIds));
  }
}
